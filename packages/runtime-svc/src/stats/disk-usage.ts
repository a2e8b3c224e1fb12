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

/** diskUsage with a per-path cache, so frequent stats calls do not walk big trees every time. */
export class DiskUsageCache {
  private readonly entries = new Map<string, { at: number; usage: DiskUsage }>();

  constructor(private readonly maxAgeMs = 10_000) {}

  async get(path: string): Promise<DiskUsage> {
    const cached = this.entries.get(path);
    if (cached && Date.now() - cached.at < this.maxAgeMs) return cached.usage;
    const usage = await diskUsage(path);
    this.entries.set(path, { at: Date.now(), usage });
    return usage;
  }

  forget(path: string): void {
    this.entries.delete(path);
  }
}
