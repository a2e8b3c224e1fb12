import { promises as fs } from 'node:fs';
import { capabilitiesFromMask } from './capabilities.js';

/** What the spec builder needs to know about the machine; read once at daemon start. */
/** The AppArmor profile used for RuntimeDefault when it is loaded on the host. */
export const APPARMOR_DEFAULT_PROFILE = 'skiff-default';

export interface HostFacts {
  /** The daemon's own oom_score_adj: without CAP_SYS_RESOURCE no child may go below it. */
  oomScoreAdj: number;
  /** Capabilities the daemon itself may hand out (its bounding set). */
  boundingCapabilities: string[];
  apparmorEnabled: boolean;
  /** Whether APPARMOR_DEFAULT_PROFILE is loaded; RuntimeDefault runs unconfined by AppArmor otherwise. */
  apparmorDefaultProfileLoaded: boolean;
  /** cgroup v1 controllers mounted on this host (empty on a pure cgroup v2 host). */
  cgroupV1Controllers: string[];
  cgroupVersion: 1 | 2;
  /** The daemon's hard rlimits by RLIMIT_* name (Infinity for unlimited); children cannot exceed them without CAP_SYS_RESOURCE. */
  hardRlimits?: Record<string, number>;
}

const LIMIT_NAMES: Record<string, string> = {
  'Max cpu time': 'RLIMIT_CPU',
  'Max file size': 'RLIMIT_FSIZE',
  'Max data size': 'RLIMIT_DATA',
  'Max stack size': 'RLIMIT_STACK',
  'Max core file size': 'RLIMIT_CORE',
  'Max resident set': 'RLIMIT_RSS',
  'Max processes': 'RLIMIT_NPROC',
  'Max open files': 'RLIMIT_NOFILE',
  'Max locked memory': 'RLIMIT_MEMLOCK',
  'Max address space': 'RLIMIT_AS',
  'Max file locks': 'RLIMIT_LOCKS',
  'Max pending signals': 'RLIMIT_SIGPENDING',
  'Max msgqueue size': 'RLIMIT_MSGQUEUE',
  'Max nice priority': 'RLIMIT_NICE',
  'Max realtime priority': 'RLIMIT_RTPRIO',
  'Max realtime timeout': 'RLIMIT_RTTIME',
};

/** Hard limits from /proc/self/limits, whose columns are fixed-width: name, soft, hard, units. */
export function parseHardRlimits(procLimits: string): Record<string, number> {
  const out: Record<string, number> = {};
  for (const line of procLimits.split('\n')) {
    const name = Object.keys(LIMIT_NAMES).find((n) => line.startsWith(n));
    if (!name) continue;
    const [, hard] = line.slice(name.length).trim().split(/\s+/);
    if (hard === undefined) continue;
    out[LIMIT_NAMES[name]!] = hard === 'unlimited' ? Infinity : Number(hard);
  }
  return out;
}

async function readText(path: string): Promise<string | undefined> {
  try {
    return await fs.readFile(path, 'utf8');
  } catch {
    return undefined;
  }
}

export function parseBoundingCapabilities(procStatus: string): string[] {
  const line = procStatus.split('\n').find((l) => l.startsWith('CapBnd:'));
  if (!line) throw new Error('no CapBnd line in /proc/self/status');
  return capabilitiesFromMask(line.slice('CapBnd:'.length));
}

/** Controllers from /proc/self/cgroup lines like "4:cpu,cpuacct:/user.slice"; "name=" hierarchies are skipped. */
export function parseCgroupV1Controllers(procCgroup: string): string[] {
  const controllers: string[] = [];
  for (const line of procCgroup.split('\n')) {
    const [id, list] = line.split(':');
    if (!id || id === '0' || !list) continue;
    for (const c of list.split(',')) if (c && !c.startsWith('name=')) controllers.push(c);
  }
  return controllers.sort();
}

export async function readHostFacts(): Promise<HostFacts> {
  const oom = Number.parseInt((await readText('/proc/self/oom_score_adj'))?.trim() ?? '0', 10);
  const status = await fs.readFile('/proc/self/status', 'utf8');
  const apparmor = (await readText('/sys/module/apparmor/parameters/enabled'))?.trim() === 'Y';
  const profiles = apparmor ? ((await readText('/sys/kernel/security/apparmor/profiles')) ?? '') : '';
  const hardRlimits = parseHardRlimits((await readText('/proc/self/limits')) ?? '');
  const cgroupV1Controllers = parseCgroupV1Controllers((await readText('/proc/self/cgroup')) ?? '');
  return {
    oomScoreAdj: Number.isInteger(oom) ? oom : 0,
    boundingCapabilities: parseBoundingCapabilities(status),
    apparmorEnabled: apparmor,
    apparmorDefaultProfileLoaded: profiles.split('\n').some((l) => l.startsWith(`${APPARMOR_DEFAULT_PROFILE} `)),
    cgroupV1Controllers,
    cgroupVersion: cgroupV1Controllers.length > 0 ? 1 : 2,
    hardRlimits,
  };
}
