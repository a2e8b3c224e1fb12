import { cgroupDirs, parseFlatKeyed, readIn, readSampleTexts, sampleFromTexts, type CgroupDirs, type CgroupFileReader, type CgroupSample } from './cgroup-stats.js';

/**
 * The counters and limits of a cgroup that only the cAdvisor metrics need (CPU split and
 * throttling, page cache, OOM kills, CFS limits, processes): read alongside a CgroupSample, once
 * per cgroup per call.
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
}

/** USER_HZ: the unit of cpuacct.stat. */
const TICK_NANOS = 10_000_000;

function parseInt(text: string | undefined): number | undefined {
  const trimmed = text?.trim();
  return trimmed === undefined || !/^-?\d+$/.test(trimmed) ? undefined : Number(trimmed);
}

function countLines(text: string | undefined): number | undefined {
  if (text === undefined) return undefined;
  let lines = 0;
  let start = 0;
  while (start < text.length) {
    let end = text.indexOf('\n', start);
    if (end < 0) end = text.length;
    if (end > start) lines++;
    start = end + 1;
  }
  return lines;
}

function set<K extends keyof CgroupDetail>(detail: CgroupDetail, key: K, value: CgroupDetail[K] | undefined): void {
  if (value !== undefined) detail[key] = value;
}

/**
 * A cgroup's sample and detail, each file read once, all at the same time. `readLimit` reads the
 * files of the limits (CPU quota, period and shares or weight, memory limit), which change only
 * when the container's resources are updated.
 */
export async function readCgroupReading(dirs: CgroupDirs, readLimit: CgroupFileReader = readIn): Promise<{ sample: CgroupSample; detail: CgroupDetail }> {
  const detail: CgroupDetail = {};
  if (dirs.cgroupV2) {
    const dir = dirs.cpu!;
    const cpuStat = readIn(dir, 'cpu.stat');
    const [texts, events, max, weight, procs] = await Promise.all([
      readSampleTexts(dirs, cpuStat, readLimit),
      readIn(dir, 'memory.events'),
      readLimit(dir, 'cpu.max'),
      readLimit(dir, 'cpu.weight'),
      readIn(dir, 'cgroup.procs'),
    ]);
    const memoryStat = parseFlatKeyed(texts.memoryStat);
    fillV2(detail, parseFlatKeyed(texts.cpu), memoryStat, events, max, weight, procs);
    return { sample: sampleFromTexts(texts, memoryStat), detail };
  }
  const [texts, acct, cpuStat, oom, quota, period, shares, procs] = await Promise.all([
    readSampleTexts(dirs, undefined, readLimit),
    readIn(dirs.cpuacct, 'cpuacct.stat'),
    readIn(dirs.cpu, 'cpu.stat'),
    readIn(dirs.memory, 'memory.oom_control'),
    readLimit(dirs.cpu, 'cpu.cfs_quota_us'),
    readLimit(dirs.cpu, 'cpu.cfs_period_us'),
    readLimit(dirs.cpu, 'cpu.shares'),
    readIn(dirs.pids ?? dirs.memory, 'cgroup.procs'),
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
  set(detail, 'processes', countLines(procs));
  return { sample: sampleFromTexts(texts, memoryStat), detail };
}

/** cpu.weight is turned back into shares as the kubelet sets them. */
function fillV2(
  detail: CgroupDetail,
  cpu: Map<string, number>,
  memoryStat: Map<string, number>,
  events: string | undefined,
  max: string | undefined,
  weightText: string | undefined,
  procs: string | undefined,
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
  set(detail, 'oomKills', parseFlatKeyed(events).get('oom_kill'));
  set(detail, 'cpuQuotaMicros', quota && /^\d+$/.test(quota) ? Number(quota) : undefined);
  set(detail, 'cpuPeriodMicros', period && /^\d+$/.test(period) ? Number(period) : undefined);
  set(detail, 'cpuShares', weight === undefined ? undefined : Math.round(2 + ((weight - 1) * 262142) / 9999));
  set(detail, 'processes', countLines(procs));
}

/** The detail of a process's cgroup (see readCgroupSample for the arguments), v1 or v2. */
export async function readCgroupDetail(cgroups: ReadonlyMap<string, string>, mounts: ReadonlyMap<string, string>): Promise<CgroupDetail> {
  const dirs = cgroupDirs(cgroups, mounts);
  return dirs ? (await readCgroupReading(dirs)).detail : {};
}

/** cgroup v2: `dir` is the cgroup's directory. */
export async function readCgroupDetailV2(dir: string): Promise<CgroupDetail> {
  return (await readCgroupReading({ cgroupV2: true, cpu: dir, cpuacct: dir, memory: dir, pids: dir, unified: dir })).detail;
}
