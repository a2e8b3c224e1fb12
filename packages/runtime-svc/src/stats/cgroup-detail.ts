import { parseBlkioV1, parseIoStatV2, type BlockIo } from './block-io.js';
import { countOpenFiles, parsePids } from './open-files.js';
import { cgroupDirs, parseFlatKeyed, readIn, readSampleTexts, sampleFromTexts, type CgroupDirs, type CgroupFileReader, type CgroupSample } from './cgroup-stats.js';

/**
 * The counters and limits of a cgroup that only the cAdvisor metrics need (CPU split and
 * throttling, memory detail, OOM kills, CFS and pid limits, processes and their descriptors,
 * block I/O): read alongside a CgroupSample, once per cgroup per call.
 */
export interface CgroupDetail {
  cpuUserNanos?: number;
  cpuSystemNanos?: number;
  cfsPeriods?: number;
  cfsThrottledPeriods?: number;
  cfsThrottledNanos?: number;
  cacheBytes?: number;
  oomKills?: number;
  cpuQuotaMicros?: number;
  cpuPeriodMicros?: number;
  cpuShares?: number;
  processes?: number;
  /** Times usage hit the memory limit (v1 memory.failcnt; v2 the "max" events). */
  memoryFailcnt?: number;
  /** Kernel memory charged to the cgroup (v1 memory.kmem.usage_in_bytes; v2 memory.stat "kernel"). */
  kernelBytes?: number;
  mappedFileBytes?: number;
  /** Highest memory usage recorded (v1 memory.max_usage_in_bytes; v2 memory.peak). */
  maxUsageBytes?: number;
  /** pids.max; 0 when unlimited. */
  threadsMax?: number;
  /** Descriptors the cgroup's processes hold open, and how many are sockets. */
  fileDescriptors?: number;
  sockets?: number;
  blockIo?: BlockIo[];
}

/** USER_HZ: the unit of cpuacct.stat. */
const TICK_NANOS = 10_000_000;

function parseInt(text: string | undefined): number | undefined {
  const trimmed = text?.trim();
  return trimmed === undefined || !/^-?\d+$/.test(trimmed) ? undefined : Number(trimmed);
}

function set<K extends keyof CgroupDetail>(detail: CgroupDetail, key: K, value: CgroupDetail[K] | undefined): void {
  if (value !== undefined) detail[key] = value;
}

/**
 * A cgroup's sample and detail, each file read once, all at the same time. `readLimit` reads the
 * files of the limits (CPU quota, period and shares or weight, memory limit), which change only
 * when the container's resources are updated.
 */
export async function readCgroupReading(dirs: CgroupDirs, readLimit: CgroupFileReader = readIn, procRoot = '/proc'): Promise<{ sample: CgroupSample; detail: CgroupDetail }> {
  const detail: CgroupDetail = {};
  if (dirs.cgroupV2) {
    const dir = dirs.cpu!;
    const cpuStat = readIn(dir, 'cpu.stat');
    const [texts, events, max, weight, procs, peak, pidsMax, ioStat] = await Promise.all([
      readSampleTexts(dirs, cpuStat, readLimit),
      readIn(dir, 'memory.events'),
      readLimit(dir, 'cpu.max'),
      readLimit(dir, 'cpu.weight'),
      readIn(dir, 'cgroup.procs'),
      readIn(dir, 'memory.peak'),
      readLimit(dir, 'pids.max'),
      readIn(dir, 'io.stat'),
    ]);
    const memoryStat = parseFlatKeyed(texts.memoryStat);
    const memoryEvents = parseFlatKeyed(events);
    fillV2(detail, parseFlatKeyed(texts.cpu), memoryStat, memoryEvents, max, weight);
    set(detail, 'memoryFailcnt', memoryEvents.get('max'));
    set(detail, 'kernelBytes', memoryStat.get('kernel'));
    set(detail, 'mappedFileBytes', memoryStat.get('file_mapped'));
    set(detail, 'maxUsageBytes', parseInt(peak));
    await fillProcesses(detail, procs, pidsMax, procRoot);
    detail.blockIo = parseIoStatV2(ioStat);
    return { sample: sampleFromTexts(texts, memoryStat), detail };
  }
  const [texts, acct, cpuStat, oom, quota, period, shares, procs, failcnt, kmem, maxUsage, pidsMax, ioBytes, ioOps] = await Promise.all([
    readSampleTexts(dirs, undefined, readLimit),
    readIn(dirs.cpuacct, 'cpuacct.stat'),
    readIn(dirs.cpu, 'cpu.stat'),
    readIn(dirs.memory, 'memory.oom_control'),
    readLimit(dirs.cpu, 'cpu.cfs_quota_us'),
    readLimit(dirs.cpu, 'cpu.cfs_period_us'),
    readLimit(dirs.cpu, 'cpu.shares'),
    readIn(dirs.pids ?? dirs.memory, 'cgroup.procs'),
    readIn(dirs.memory, 'memory.failcnt'),
    readIn(dirs.memory, 'memory.kmem.usage_in_bytes'),
    readIn(dirs.memory, 'memory.max_usage_in_bytes'),
    readLimit(dirs.pids, 'pids.max'),
    readIn(dirs.blkio, 'blkio.throttle.io_service_bytes'),
    readIn(dirs.blkio, 'blkio.throttle.io_serviced'),
  ]);
  const memoryStat = parseFlatKeyed(texts.memoryStat);
  const acctStat = parseFlatKeyed(acct);
  const throttle = parseFlatKeyed(cpuStat);
  const user = acctStat.get('user');
  const system = acctStat.get('system');
  const quotaMicros = parseInt(quota);
  set(detail, 'cpuUserNanos', user === undefined ? undefined : user * TICK_NANOS);
  set(detail, 'cpuSystemNanos', system === undefined ? undefined : system * TICK_NANOS);
  set(detail, 'cfsPeriods', throttle.get('nr_periods'));
  set(detail, 'cfsThrottledPeriods', throttle.get('nr_throttled'));
  set(detail, 'cfsThrottledNanos', throttle.get('throttled_time'));
  set(detail, 'cacheBytes', memoryStat.get('total_cache'));
  set(detail, 'oomKills', parseFlatKeyed(oom).get('oom_kill'));
  set(detail, 'cpuQuotaMicros', quotaMicros !== undefined && quotaMicros > 0 ? quotaMicros : undefined);
  set(detail, 'cpuPeriodMicros', parseInt(period));
  set(detail, 'cpuShares', parseInt(shares));
  set(detail, 'memoryFailcnt', parseInt(failcnt));
  set(detail, 'kernelBytes', parseInt(kmem));
  set(detail, 'mappedFileBytes', memoryStat.get('total_mapped_file'));
  set(detail, 'maxUsageBytes', parseInt(maxUsage));
  await fillProcesses(detail, procs, pidsMax, procRoot);
  if (dirs.blkio) detail.blockIo = parseBlkioV1(ioBytes, ioOps);
  return { sample: sampleFromTexts(texts, memoryStat), detail };
}

/** Processes, their descriptors and the pid limit ("max": unlimited, 0 as cAdvisor reports it). */
async function fillProcesses(detail: CgroupDetail, procs: string | undefined, pidsMax: string | undefined, procRoot: string): Promise<void> {
  if (procs !== undefined) {
    const pids = parsePids(procs);
    const open = await countOpenFiles(pids, procRoot);
    detail.processes = pids.length;
    detail.fileDescriptors = open.fileDescriptors;
    detail.sockets = open.sockets;
  }
  set(detail, 'threadsMax', pidsMax?.trim() === 'max' ? 0 : parseInt(pidsMax));
}

/** cpu.weight is turned back into shares as the kubelet sets them. */
function fillV2(
  detail: CgroupDetail,
  cpu: Map<string, number>,
  memoryStat: Map<string, number>,
  events: Map<string, number>,
  max: string | undefined,
  weightText: string | undefined,
): void {
  const micros = (key: string): number | undefined => {
    const v = cpu.get(key);
    return v === undefined ? undefined : v * 1000;
  };
  const [quota, period] = (max ?? '').trim().split(/\s+/);
  const weight = parseInt(weightText);
  set(detail, 'cpuUserNanos', micros('user_usec'));
  set(detail, 'cpuSystemNanos', micros('system_usec'));
  set(detail, 'cfsPeriods', cpu.get('nr_periods'));
  set(detail, 'cfsThrottledPeriods', cpu.get('nr_throttled'));
  set(detail, 'cfsThrottledNanos', micros('throttled_usec'));
  set(detail, 'cacheBytes', memoryStat.get('file'));
  set(detail, 'oomKills', events.get('oom_kill'));
  set(detail, 'cpuQuotaMicros', quota && /^\d+$/.test(quota) ? Number(quota) : undefined);
  set(detail, 'cpuPeriodMicros', period && /^\d+$/.test(period) ? Number(period) : undefined);
  set(detail, 'cpuShares', weight === undefined ? undefined : Math.round(2 + ((weight - 1) * 262142) / 9999));
}

/** The detail of a process's cgroup (see readCgroupSample for the arguments), v1 or v2. */
export async function readCgroupDetail(cgroups: ReadonlyMap<string, string>, mounts: ReadonlyMap<string, string>): Promise<CgroupDetail> {
  const dirs = cgroupDirs(cgroups, mounts);
  return dirs ? (await readCgroupReading(dirs)).detail : {};
}

/** cgroup v2: `dir` is the cgroup's directory. */
export async function readCgroupDetailV2(dir: string, procRoot = '/proc'): Promise<CgroupDetail> {
  return (await readCgroupReading({ cgroupV2: true, cpu: dir, cpuacct: dir, memory: dir, pids: dir, blkio: dir, unified: dir }, readIn, procRoot)).detail;
}
