import type { ContainerRecord } from '../state/records.js';
import type { Runc } from '../oci/runc.js';
import type { CgroupDetail } from './cgroup-detail.js';
import type { CgroupSample } from './cgroup-stats.js';

/** The part of `runsc events --stats` output that is read. */
interface RunscStats {
  data?: {
    cpu?: { usage?: { total?: number; kernel?: number; user?: number } };
    memory?: { usage?: { usage?: number; limit?: number } };
    pids?: { current?: number };
  };
}

const UNLIMITED = 2 ** 60;

/** Parses one `runsc events --stats` reading into a cgroup-like sample. */
export function parseRunscStats(json: string): CgroupSample {
  const stats = JSON.parse(json) as RunscStats;
  const memory = stats.data?.memory?.usage;
  const limit = memory?.limit;
  return {
    cpuNanos: stats.data?.cpu?.usage?.total,
    memoryUsage: memory?.usage,
    // The sandbox's kernel accounts only memory in use; none of it is reclaimable cache.
    workingSet: memory?.usage,
    memoryLimit: limit !== undefined && limit > 0 && limit < UNLIMITED ? limit : undefined,
    pids: stats.data?.pids?.current,
  };
}

/** How many processes `runsc ps --format json` lists (a JSON array of pids); undefined if it is not one. */
export function parseRunscPsCount(json: string): number | undefined {
  const pids: unknown = JSON.parse(json);
  return Array.isArray(pids) ? pids.length : undefined;
}

/**
 * A container in a sandbox-kind runtime's sandbox (runsc) has no cgroup of its own on the host:
 * its usage comes from the sandbox's kernel, through `runsc events --stats`.
 */
export async function readSandboxedSample(runc: Runc, id: string): Promise<CgroupSample> {
  try {
    return parseRunscStats(await runc.eventsStats(id));
  } catch {
    return {};
  }
}

/** The number of a runsc container's processes in the sandbox's kernel; undefined when runsc cannot tell. */
export async function readSandboxedProcessCount(runc: Runc, id: string): Promise<number | undefined> {
  try {
    return parseRunscPsCount(await runc.psJson(id));
  } catch {
    return undefined;
  }
}

/** A copy of `sample` without its undefined fields. */
function definedOnly(sample: CgroupSample): CgroupSample {
  return Object.fromEntries(Object.entries(sample).filter(([, value]) => value !== undefined)) as CgroupSample;
}

/**
 * Whether `id` is the one live container of its pod (`containers`: the pod's records). Exited ones
 * the kubelet keeps (a restarted container's previous instance) hold nothing in the pod's cgroup
 * any more, so they do not count.
 */
export function isSoleLiveContainer(id: string, containers: readonly Pick<ContainerRecord, 'id' | 'phase'>[]): boolean {
  const live = containers.filter((c) => c.phase === 'created' || c.phase === 'running');
  return live.length === 1 && live[0]?.id === id;
}

/** The fields of the pod cgroup's sample `runsc events --stats` has no figure for. */
const POD_SAMPLE_FIELDS = ['rss', 'pageFaults', 'majorPageFaults', 'memoryLimit', 'swapUsage', 'swapLimit', 'cpuPressure', 'memoryPressure', 'ioPressure'] as const satisfies readonly (keyof CgroupSample)[];

/** What the pod cgroup's detail counts of its host processes: the sandbox's, never a container's. */
const HOST_PROCESS_FIELDS = ['processes', 'fileDescriptors', 'sockets'] as const satisfies readonly (keyof CgroupDetail)[];

/**
 * A runsc container's reading: its own figures from the sandbox's kernel (CPU, memory in use,
 * threads, processes), and, when it is the only container of its pod, the rest (memory detail
 * and limit, page faults, swap, pressure stall information, the cgroup's detail) from the pod's
 * cgroup, which then holds that container and the sandbox's own processes (gVisor's kernel, its
 * gofer) and nothing else. The cgroup's processes, descriptors and sockets are left out even then:
 * they are the sandbox's host processes, not the container's.
 */
export function sandboxedReading(own: CgroupSample, processes: number | undefined, soleContainerPod?: { sample: CgroupSample; detail: CgroupDetail }): { sample: CgroupSample; detail: CgroupDetail } {
  const detail: CgroupDetail = { ...soleContainerPod?.detail };
  for (const field of HOST_PROCESS_FIELDS) delete detail[field];
  const sample: CgroupSample = definedOnly(Object.fromEntries(POD_SAMPLE_FIELDS.map((field) => [field, soleContainerPod?.sample[field]])));
  Object.assign(sample, definedOnly(own));
  if (processes !== undefined) detail.processes = processes;
  return { sample, detail };
}
