import { promises as fs } from 'node:fs';
import { join } from 'node:path';

export interface DiskUsage {
  bytes: number;
  inodes: number;
}

/** Space (allocated blocks) and inodes a directory tree uses; hard links count once. Stays on one filesystem. */
export async function diskUsage(root: string): Promise<DiskUsage> {
  const seen = new Set<string>();
  let bytes = 0;
  let inodes = 0;
  const rootStat = await fs.lstat(root, { bigint: true }).catch(() => undefined);
  if (!rootStat) return { bytes: 0, inodes: 0 };
  const walk = async (dir: string): Promise<void> => {
    const entries = await fs.readdir(dir).catch(() => [] as string[]);
    for (const name of entries) {
      const path = join(dir, name);
      const st = await fs.lstat(path, { bigint: true }).catch(() => undefined);
      if (!st || st.dev !== rootStat.dev) continue;
      const key = `${st.ino}`;
      if (seen.has(key)) continue;
      seen.add(key);
      inodes++;
      bytes += Number(st.blocks) * 512;
      if (st.isDirectory()) await walk(path);
    }
  };
  await walk(root);
  return { bytes, inodes };
}

/**
 * diskUsage with a per-path cache, so frequent stats and metrics calls do not walk big trees
 * every time. A value older than `maxAgeMs` is still answered while a new walk runs in the
 * background (one per path at a time): a call waits for a walk only the first time a path is asked for.
 * A minute by default, as the kubelet's cAdvisor refreshes a container's disk use: the kubelet asks
 * for every container's stats every 10-15 s, and walking each writable layer on each of those asks
 * was about half of what those calls cost.
 */
export class DiskUsageCache {
  private readonly entries = new Map<string, { at: number; usage: DiskUsage }>();
  private readonly walks = new Map<string, Promise<DiskUsage>>();

  constructor(private readonly maxAgeMs = 60_000) {}

  async get(path: string): Promise<DiskUsage> {
    const cached = this.entries.get(path);
    if (!cached) return this.walk(path);
    if (Date.now() - cached.at >= this.maxAgeMs) void this.walk(path);
    return cached.usage;
  }

  forget(path: string): void {
    this.entries.delete(path);
    this.walks.delete(path);
  }

  private walk(path: string): Promise<DiskUsage> {
    const running = this.walks.get(path);
    if (running) return running;
    const walk = diskUsage(path)
      .catch(() => ({ bytes: 0, inodes: 0 }))
      .then((usage) => {
        // A path forgotten meanwhile stays forgotten.
        if (this.walks.get(path) === walk) {
          this.walks.delete(path);
          this.entries.set(path, { at: Date.now(), usage });
        }
        return usage;
      });
    this.walks.set(path, walk);
    return walk;
  }
}

/** The size (bytes) and free inodes of the filesystem a path is on (statfs), or undefined when it cannot be read. */
export async function filesystemCapacity(path: string): Promise<{ limitBytes: number; inodesFree: number } | undefined> {
  const st = await fs.statfs(path).catch(() => undefined);
  return st ? { limitBytes: st.blocks * st.bsize, inodesFree: st.ffree } : undefined;
}
