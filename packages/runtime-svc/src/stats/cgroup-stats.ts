import { join } from 'node:path';
import { CgroupFileHandles } from './cgroup-file-handles.js';

/** One line of a PSI file: cumulative stall time (ns) and the kernel's averages over 10, 60 and 300 s (percent). */
export interface PressureLine {
  totalNanos: number;
  avg10: number;
  avg60: number;
  avg300: number;
}

/** A cgroup's pressure stall information for one resource: some task stalled, all tasks stalled. */
export interface Pressure {
  some?: PressureLine;
  full?: PressureLine;
}

/** One reading of a cgroup's counters; absent fields were not available. */
export interface CgroupSample {
  cpuNanos?: number;
  memoryUsage?: number;
  workingSet?: number;
  rss?: number;
  pageFaults?: number;
  majorPageFaults?: number;
  /** Undefined when unlimited. */
  memoryLimit?: number;
  pids?: number;
  /** Swap in use; undefined when the kernel does not account it (v1 without swap accounting). */
  swapUsage?: number;
  /** Swap the cgroup may use (v1: the memory+swap limit less the memory limit); undefined when unlimited. */
  swapLimit?: number;
  /** From the cgroup's cgroup2 files: on v2, and on a hybrid v1 host from its unified hierarchy. */
  cpuPressure?: Pressure;
  memoryPressure?: Pressure;
  ioPressure?: Pressure;
}

/** Limits at or above this are the kernel's "no limit". */
const UNLIMITED = 2 ** 60;

/** A single-number file's value ("max" is Infinity). */
export function parseNumber(text: string | undefined): number | undefined {
  if (text === undefined) return undefined;
  const trimmed = text.trim();
  if (trimmed === 'max') return Infinity;
  const n = Number(trimmed);
  return trimmed !== '' && Number.isFinite(n) ? n : undefined;
}

/** A PSI file (cpu.pressure, memory.pressure, io.pressure): "some avg10=0.12 avg60=0.05 avg300=0.01 total=12345" lines, totals in µs. */
export function parsePressure(text: string | undefined): Pressure | undefined {
  if (text === undefined) return undefined;
  const out: Pressure = {};
  for (const raw of text.split('\n')) {
    const line = raw.trim();
    const kind = line.startsWith('some ') ? 'some' : line.startsWith('full ') ? 'full' : undefined;
    if (kind === undefined) continue;
    const [avg10, avg60, avg300, total] = [fieldOf(line, 'avg10='), fieldOf(line, 'avg60='), fieldOf(line, 'avg300='), fieldOf(line, 'total=')];
    if (avg10 === undefined || avg60 === undefined || avg300 === undefined || total === undefined) continue;
    out[kind] = { totalNanos: total * 1000, avg10, avg60, avg300 };
  }
  return out.some || out.full ? out : undefined;
}

/** The number after `key` ("avg10=") in a PSI line, up to the next space. */
function fieldOf(line: string, key: string): number | undefined {
  const at = line.indexOf(key);
  if (at < 0 || (at > 0 && line[at - 1] !== ' ')) return undefined;
  const end = line.indexOf(' ', at);
  const text = line.slice(at + key.length, end < 0 ? undefined : end);
  const n = Number(text);
  return text !== '' && Number.isFinite(n) ? n : undefined;
}

/** "key value" lines (memory.stat, cpu.stat) as a map; lines whose value is not a whole number are left out. */
export function parseFlatKeyed(text: string | undefined): Map<string, number> {
  const out = new Map<string, number>();
  if (text === undefined) return out;
  let start = 0;
  while (start < text.length) {
    let end = text.indexOf('\n', start);
    if (end < 0) end = text.length;
    const space = text.indexOf(' ', start);
    if (space > start && space < end) {
      const value = wholeNumberIn(text, space + 1, end);
      if (value !== undefined) out.set(text.slice(start, space), value);
    }
    start = end + 1;
  }
  return out;
}

/** The digits from `from` to `to` (surrounding blanks allowed) as a number, else undefined. */
function wholeNumberIn(text: string, from: number, to: number): number | undefined {
  while (from < to && isBlank(text.charCodeAt(from))) from++;
  while (to > from && isBlank(text.charCodeAt(to - 1))) to--;
  if (from === to) return undefined;
  for (let i = from; i < to; i++) {
    const c = text.charCodeAt(i);
    if (c < 48 || c > 57) return undefined;
  }
  return Number(text.slice(from, to));
}

function isBlank(c: number): boolean {
  return c === 32 || c === 9 || c === 13;
}

/** The directory of a process's cgroup under a controller's mount ("" for cgroup v2), when both are known. */
export function cgroupDirOf(cgroups: ReadonlyMap<string, string>, mounts: ReadonlyMap<string, string>): (controller: string) => string | undefined {
  return (controller) => {
    const path = cgroups.get(controller);
    const mount = mounts.get(controller);
    return path !== undefined && mount !== undefined ? join(mount, path) : undefined;
  };
}

/**
 * A process's cgroups without a cgroup2 entry at that hierarchy's root beside v1 controllers: on a
 * hybrid host a runtime that manages v1 alone (runsc) leaves its processes there, and the root's
 * pressure files are the whole host's, not theirs.
 */
export function withoutRootUnified(cgroups: ReadonlyMap<string, string>): Map<string, string> {
  const out = new Map(cgroups);
  if (out.get('') === '/' && out.size > 1) out.delete('');
  return out;
}

/** The daemon's cgroup files, kept open between readings. */
export const cgroupFiles = new CgroupFileHandles();

/** A file in a cgroup directory that may not be known: read, or undefined. */
export function readIn(dir: string | undefined, name: string): Promise<string | undefined> {
  return Promise.resolve(dir === undefined ? undefined : cgroupFiles.read(dir, name));
}

/** The texts a CgroupSample is made of; the same files on v1 and v2 play the same parts. */
export interface SampleTexts {
  cgroupV2: boolean;
  /** v1 cpuacct.usage (ns); v2 cpu.stat (usage_usec). */
  cpu: string | undefined;
  /** memory.usage_in_bytes / memory.current */
  memoryUsage: string | undefined;
  memoryStat: string | undefined;
  /** memory.limit_in_bytes / memory.max */
  memoryLimit: string | undefined;
  pidsCurrent: string | undefined;
  /** memory.memsw.usage_in_bytes (memory and swap together) / memory.swap.current */
  swapUsage: string | undefined;
  /** memory.memsw.limit_in_bytes / memory.swap.max */
  swapLimit: string | undefined;
  /** cpu.pressure, memory.pressure, io.pressure of the cgroup2 directory. */
  cpuPressure: string | undefined;
  memoryPressure: string | undefined;
  ioPressure: string | undefined;
}

/** The directories a cgroup's files are read from: one per v1 controller, the unified one for all on v2. */
export interface CgroupDirs {
  cgroupV2: boolean;
  cpu: string | undefined;
  cpuacct: string | undefined;
  memory: string | undefined;
  pids: string | undefined;
  /** Block I/O counters (v1 blkio). */
  blkio?: string | undefined;
  /** The cgroup2 directory (PSI files): on v2 the cgroup's own, on a hybrid v1 host its unified hierarchy's. */
  unified?: string | undefined;
}

/** Where a process's cgroup files are, from its /proc/<pid>/cgroup and the controllers' mounts. */
export function cgroupDirs(cgroups: ReadonlyMap<string, string>, mounts: ReadonlyMap<string, string>): CgroupDirs | undefined {
  const dirOf = cgroupDirOf(cgroups, mounts);
  const cpuacct = dirOf('cpuacct');
  const memory = dirOf('memory');
  const unified = dirOf('');
  if (cpuacct || memory) return { cgroupV2: false, cpu: dirOf('cpu'), cpuacct, memory, pids: dirOf('pids'), blkio: dirOf('blkio'), unified };
  return unified ? { cgroupV2: true, cpu: unified, cpuacct: unified, memory: unified, pids: unified, blkio: unified, unified } : undefined;
}

/** Reads a file of a cgroup directory; the limit files may be answered from a cache (see StatsCollector). */
export type CgroupFileReader = (dir: string | undefined, name: string) => Promise<string | undefined>;

/**
 * The sample's files, read in parallel; `cpuStat`: cpu.stat when the caller reads it already (v2);
 * `readLimit` reads the memory limit.
 */
export async function readSampleTexts(dirs: CgroupDirs, cpuStat?: Promise<string | undefined>, readLimit: CgroupFileReader = readIn): Promise<SampleTexts> {
  const v2 = dirs.cgroupV2;
  const [cpu, memoryUsage, memoryStat, memoryLimit, pidsCurrent, swapUsage, swapLimit, cpuPressure, memoryPressure, ioPressure] = await Promise.all([
    v2 ? (cpuStat ?? readIn(dirs.cpu, 'cpu.stat')) : readIn(dirs.cpuacct, 'cpuacct.usage'),
    readIn(dirs.memory, v2 ? 'memory.current' : 'memory.usage_in_bytes'),
    readIn(dirs.memory, 'memory.stat'),
    readLimit(dirs.memory, v2 ? 'memory.max' : 'memory.limit_in_bytes'),
    readIn(dirs.pids, 'pids.current'),
    readIn(dirs.memory, v2 ? 'memory.swap.current' : 'memory.memsw.usage_in_bytes'),
    readLimit(dirs.memory, v2 ? 'memory.swap.max' : 'memory.memsw.limit_in_bytes'),
    readIn(dirs.unified, 'cpu.pressure'),
    readIn(dirs.unified, 'memory.pressure'),
    readIn(dirs.unified, 'io.pressure'),
  ]);
  return { cgroupV2: v2, cpu, memoryUsage, memoryStat, memoryLimit, pidsCurrent, swapUsage, swapLimit, cpuPressure, memoryPressure, ioPressure };
}

export function sampleFromTexts(t: SampleTexts, memoryStat: Map<string, number> = parseFlatKeyed(t.memoryStat)): CgroupSample {
  const sample: CgroupSample = {};
  const prefix = t.cgroupV2 ? '' : 'total_';
  if (t.cgroupV2) {
    const usec = parseFlatKeyed(t.cpu).get('usage_usec');
    if (usec !== undefined) sample.cpuNanos = usec * 1000;
  } else {
    const nanos = parseNumber(t.cpu);
    if (nanos !== undefined) sample.cpuNanos = nanos;
  }
  const usage = parseNumber(t.memoryUsage);
  if (usage !== undefined) {
    sample.memoryUsage = usage;
    sample.workingSet = Math.max(0, usage - (memoryStat.get(`${prefix}inactive_file`) ?? 0));
  }
  const rss = memoryStat.get(t.cgroupV2 ? 'anon' : 'total_rss');
  if (rss !== undefined) sample.rss = rss;
  const faults = memoryStat.get(`${prefix}pgfault`);
  if (faults !== undefined) sample.pageFaults = faults;
  const major = memoryStat.get(`${prefix}pgmajfault`);
  if (major !== undefined) sample.majorPageFaults = major;
  const limit = parseNumber(t.memoryLimit);
  if (limit !== undefined && limit < UNLIMITED) sample.memoryLimit = limit;
  const pids = parseNumber(t.pidsCurrent);
  if (pids !== undefined) sample.pids = pids;
  fillSwap(sample, t);
  const cpuPressure = parsePressure(t.cpuPressure);
  if (cpuPressure) sample.cpuPressure = cpuPressure;
  const memoryPressure = parsePressure(t.memoryPressure);
  if (memoryPressure) sample.memoryPressure = memoryPressure;
  const ioPressure = parsePressure(t.ioPressure);
  if (ioPressure) sample.ioPressure = ioPressure;
  return sample;
}

/** v2 has files of swap alone; v1 counts memory and swap together (memsw), when swap accounting is on. */
function fillSwap(sample: CgroupSample, t: SampleTexts): void {
  const used = parseNumber(t.swapUsage);
  const limit = parseNumber(t.swapLimit);
  if (t.cgroupV2) {
    if (used !== undefined) sample.swapUsage = used;
    if (limit !== undefined && limit < UNLIMITED) sample.swapLimit = limit;
    return;
  }
  if (used !== undefined && sample.memoryUsage !== undefined) sample.swapUsage = Math.max(0, used - sample.memoryUsage);
  if (limit !== undefined && limit < UNLIMITED && sample.memoryLimit !== undefined) sample.swapLimit = Math.max(0, limit - sample.memoryLimit);
}

/**
 * Reads a cgroup's CPU, memory and pid counters. `cgroups` maps controllers to the cgroup's path
 * (as in /proc/<pid>/cgroup; "" for cgroup v2), `mounts` maps them to where they are mounted.
 */
export async function readCgroupSample(cgroups: ReadonlyMap<string, string>, mounts: ReadonlyMap<string, string>): Promise<CgroupSample> {
  const dirs = cgroupDirs(cgroups, mounts);
  return dirs ? sampleFromTexts(await readSampleTexts(dirs)) : {};
}

type Counter = 'cpuNanos' | 'memoryUsage' | 'workingSet' | 'rss' | 'pageFaults' | 'majorPageFaults' | 'pids';

/** Adds the counters of samples field by field (a pod without a cgroup of its own is the sum of its containers); pressure does not add up. */
export function sumSamples(samples: readonly CgroupSample[]): CgroupSample {
  const out: CgroupSample = {};
  const keys: Counter[] = ['cpuNanos', 'memoryUsage', 'workingSet', 'rss', 'pageFaults', 'majorPageFaults', 'pids'];
  for (const s of samples) {
    for (const k of keys) {
      const v = s[k];
      if (v !== undefined) out[k] = (out[k] ?? 0) + v;
    }
  }
  return out;
}
