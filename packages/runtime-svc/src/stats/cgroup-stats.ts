import { promises as fs } from 'node:fs';
import { join } from 'node:path';

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
}

/** Limits at or above this are the kernel's "no limit". */
const UNLIMITED = 2 ** 60;

async function readNumber(path: string): Promise<number | undefined> {
  try {
    const text = (await fs.readFile(path, 'utf8')).trim();
    if (text === 'max') return Infinity;
    const n = Number(text);
    return Number.isFinite(n) ? n : undefined;
  } catch {
    return undefined;
  }
}

/** "key value" lines (memory.stat, cpu.stat) as a map. */
export function parseFlatKeyed(text: string): Map<string, number> {
  const out = new Map<string, number>();
  for (const line of text.split('\n')) {
    const [key, value] = line.trim().split(/\s+/);
    if (key && value !== undefined && /^\d+$/.test(value)) out.set(key, Number(value));
  }
  return out;
}

async function readFlatKeyed(path: string): Promise<Map<string, number>> {
  return parseFlatKeyed(await fs.readFile(path, 'utf8').catch(() => ''));
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
 * Reads a cgroup's CPU, memory and pid counters. `cgroups` maps controllers to the cgroup's path
 * (as in /proc/<pid>/cgroup; "" for cgroup v2), `mounts` maps them to where they are mounted.
 */
export async function readCgroupSample(cgroups: ReadonlyMap<string, string>, mounts: ReadonlyMap<string, string>): Promise<CgroupSample> {
  const dirOf = cgroupDirOf(cgroups, mounts);
  const sample: CgroupSample = {};
  const cpuacct = dirOf('cpuacct');
  const memory = dirOf('memory');
  const pids = dirOf('pids');
  if (cpuacct || memory) {
    if (cpuacct) sample.cpuNanos = await readNumber(join(cpuacct, 'cpuacct.usage'));
    if (memory) {
      const usage = await readNumber(join(memory, 'memory.usage_in_bytes'));
      const stat = await readFlatKeyed(join(memory, 'memory.stat'));
      const limit = await readNumber(join(memory, 'memory.limit_in_bytes'));
      if (usage !== undefined) {
        sample.memoryUsage = usage;
        sample.workingSet = Math.max(0, usage - (stat.get('total_inactive_file') ?? 0));
      }
      sample.rss = stat.get('total_rss');
      sample.pageFaults = stat.get('total_pgfault');
      sample.majorPageFaults = stat.get('total_pgmajfault');
      if (limit !== undefined && limit < UNLIMITED) sample.memoryLimit = limit;
    }
  } else {
    const unified = dirOf('');
    if (unified) {
      const cpu = await readFlatKeyed(join(unified, 'cpu.stat'));
      const usec = cpu.get('usage_usec');
      if (usec !== undefined) sample.cpuNanos = usec * 1000;
      const usage = await readNumber(join(unified, 'memory.current'));
      const stat = await readFlatKeyed(join(unified, 'memory.stat'));
      const limit = await readNumber(join(unified, 'memory.max'));
      if (usage !== undefined) {
        sample.memoryUsage = usage;
        sample.workingSet = Math.max(0, usage - (stat.get('inactive_file') ?? 0));
      }
      sample.rss = stat.get('anon');
      sample.pageFaults = stat.get('pgfault');
      sample.majorPageFaults = stat.get('pgmajfault');
      if (limit !== undefined && limit < UNLIMITED) sample.memoryLimit = limit;
    }
  }
  const pidsDir = pids ?? dirOf('');
  if (pidsDir) sample.pids = await readNumber(join(pidsDir, 'pids.current'));
  return sample;
}

/** Adds samples field by field (a pod without a cgroup of its own is the sum of its containers). */
export function sumSamples(samples: readonly CgroupSample[]): CgroupSample {
  const out: CgroupSample = {};
  const keys: (keyof CgroupSample)[] = ['cpuNanos', 'memoryUsage', 'workingSet', 'rss', 'pageFaults', 'majorPageFaults', 'pids'];
  for (const s of samples) {
    for (const k of keys) {
      const v = s[k];
      if (v !== undefined) out[k] = (out[k] ?? 0) + v;
    }
  }
  return out;
}
