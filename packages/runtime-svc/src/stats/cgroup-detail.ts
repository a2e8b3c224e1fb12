import { promises as fs } from 'node:fs';
import { join } from 'node:path';
import { cgroupDirOf, parseFlatKeyed } from './cgroup-stats.js';

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

async function read(path: string): Promise<string | undefined> {
  return fs.readFile(path, 'utf8').catch(() => undefined);
}

async function readInt(path: string): Promise<number | undefined> {
  const text = (await read(path))?.trim();
  if (text === undefined || !/^-?\d+$/.test(text)) return undefined;
  return Number(text);
}

async function countLines(path: string): Promise<number | undefined> {
  const text = await read(path);
  return text === undefined ? undefined : text.split('\n').filter(Boolean).length;
}

function defined(detail: CgroupDetail): CgroupDetail {
  return Object.fromEntries(Object.entries(detail).filter(([, v]) => v !== undefined)) as CgroupDetail;
}

/** The detail of a process's cgroup (see readCgroupSample for the arguments), v1 or v2. */
export async function readCgroupDetail(cgroups: ReadonlyMap<string, string>, mounts: ReadonlyMap<string, string>): Promise<CgroupDetail> {
  const dirOf = cgroupDirOf(cgroups, mounts);
  if (dirOf('cpuacct') || dirOf('memory')) return readCgroupDetailV1(dirOf);
  const unified = dirOf('');
  return unified ? readCgroupDetailV2(unified) : {};
}

/** cgroup v1: `dirOf(controller)` is the cgroup's directory under that controller's mount. */
export async function readCgroupDetailV1(dirOf: (controller: string) => string | undefined): Promise<CgroupDetail> {
  const cpuacct = dirOf('cpuacct');
  const cpu = dirOf('cpu');
  const memory = dirOf('memory');
  const pids = dirOf('pids') ?? memory;
  const [acct, cpuStat, memStat, oom, quota, period, shares, procs] = await Promise.all([
    cpuacct ? read(join(cpuacct, 'cpuacct.stat')) : undefined,
    cpu ? read(join(cpu, 'cpu.stat')) : undefined,
    memory ? read(join(memory, 'memory.stat')) : undefined,
    memory ? read(join(memory, 'memory.oom_control')) : undefined,
    cpu ? readInt(join(cpu, 'cpu.cfs_quota_us')) : undefined,
    cpu ? readInt(join(cpu, 'cpu.cfs_period_us')) : undefined,
    cpu ? readInt(join(cpu, 'cpu.shares')) : undefined,
    pids ? countLines(join(pids, 'cgroup.procs')) : undefined,
  ]);
  const acctStat = parseFlatKeyed(acct ?? '');
  const throttle = parseFlatKeyed(cpuStat ?? '');
  const user = acctStat.get('user');
  const system = acctStat.get('system');
  return defined({
    cpuUserNanos: user === undefined ? undefined : user * TICK_NANOS,
    cpuSystemNanos: system === undefined ? undefined : system * TICK_NANOS,
    cfsPeriods: throttle.get('nr_periods'),
    cfsThrottledPeriods: throttle.get('nr_throttled'),
    cfsThrottledNanos: throttle.get('throttled_time'),
    cacheBytes: parseFlatKeyed(memStat ?? '').get('total_cache'),
    oomKills: parseFlatKeyed(oom ?? '').get('oom_kill'),
    cpuQuotaMicros: quota !== undefined && quota > 0 ? quota : undefined,
    cpuPeriodMicros: period,
    cpuShares: shares,
    processes: procs,
  });
}

/** cgroup v2: `dir` is the cgroup's directory. cpu.weight is turned back into shares as the kubelet sets them. */
export async function readCgroupDetailV2(dir: string): Promise<CgroupDetail> {
  const [cpuStat, memStat, events, max, weight, procs] = await Promise.all([
    read(join(dir, 'cpu.stat')),
    read(join(dir, 'memory.stat')),
    read(join(dir, 'memory.events')),
    read(join(dir, 'cpu.max')),
    readInt(join(dir, 'cpu.weight')),
    countLines(join(dir, 'cgroup.procs')),
  ]);
  const cpu = parseFlatKeyed(cpuStat ?? '');
  const micros = (key: string): number | undefined => {
    const v = cpu.get(key);
    return v === undefined ? undefined : v * 1000;
  };
  const [quota, period] = (max ?? '').trim().split(/\s+/);
  return defined({
    cpuUserNanos: micros('user_usec'),
    cpuSystemNanos: micros('system_usec'),
    cfsPeriods: cpu.get('nr_periods'),
    cfsThrottledPeriods: cpu.get('nr_throttled'),
    cfsThrottledNanos: micros('throttled_usec'),
    cacheBytes: parseFlatKeyed(memStat ?? '').get('file'),
    oomKills: parseFlatKeyed(events ?? '').get('oom_kill'),
    cpuQuotaMicros: quota && /^\d+$/.test(quota) ? Number(quota) : undefined,
    cpuPeriodMicros: period && /^\d+$/.test(period) ? Number(period) : undefined,
    cpuShares: weight === undefined ? undefined : Math.round(2 + ((weight - 1) * 262142) / 9999),
    processes: procs,
  });
}
