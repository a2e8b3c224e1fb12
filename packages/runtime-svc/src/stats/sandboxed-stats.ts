import type { Runc } from '../oci/runc.js';
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
