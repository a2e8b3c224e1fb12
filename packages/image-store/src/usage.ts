import { promises as fs } from 'node:fs';
import { join } from 'node:path';
import { errnoCode } from '@skiff/common';
import type { SnapshotMeta } from './types.js';

const HEX_NAME = /^[a-f0-9]{64}$/;

export interface StoreUsageTotals {
  usedBytes: number;
  inodesUsed: number;
}

async function dirKey(path: string): Promise<string> {
  try {
    const stats = await fs.stat(path, { bigint: true });
    return `${stats.ino}:${stats.mtimeNs}`;
  } catch (err) {
    if (errnoCode(err) === 'ENOENT') return 'absent';
    throw err;
  }
}

async function listHexNames(dir: string): Promise<string[]> {
  try {
    return (await fs.readdir(dir)).filter((name) => HEX_NAME.test(name));
  } catch (err) {
    if (errnoCode(err) === 'ENOENT') return [];
    throw err;
  }
}

/**
 * Bytes and inodes used by committed content, from snapshot meta.json counters and blob sizes.
 * Entries are immutable once named, so only names not seen before are read; and nothing is listed
 * at all unless a directory's mtime says an entry came or went.
 */
export class StoreUsage {
  private readonly snapshots = new Map<string, { size: number; inodes: number }>();
  private readonly blobs = new Map<string, number>();
  private key = '';
  private totals: StoreUsageTotals = { usedBytes: 0, inodesUsed: 0 };

  constructor(
    private readonly snapshotsDir: string,
    private readonly blobsDir: string,
  ) {}

  async measure(): Promise<StoreUsageTotals> {
    const key = `${await dirKey(this.snapshotsDir)}|${await dirKey(this.blobsDir)}`;
    if (key === this.key) return this.totals;
    await this.refresh();
    this.key = key;
    return this.totals;
  }

  private async refresh(): Promise<void> {
    const snapshotNames = await listHexNames(this.snapshotsDir);
    const blobNames = await listHexNames(this.blobsDir);
    forgetMissing(this.snapshots, snapshotNames);
    forgetMissing(this.blobs, blobNames);
    for (const name of snapshotNames) {
      if (this.snapshots.has(name)) continue;
      try {
        const meta = JSON.parse(await fs.readFile(join(this.snapshotsDir, name, 'meta.json'), 'utf8')) as SnapshotMeta;
        // The snapshot's own directory and meta.json come on top of the unpacked tree.
        this.snapshots.set(name, { size: meta.size, inodes: meta.inodes + 2 });
      } catch (err) {
        if (errnoCode(err) !== 'ENOENT') throw err;
      }
    }
    for (const name of blobNames) {
      if (this.blobs.has(name)) continue;
      try {
        this.blobs.set(name, (await fs.stat(join(this.blobsDir, name))).size);
      } catch (err) {
        if (errnoCode(err) !== 'ENOENT') throw err;
      }
    }
    let usedBytes = 0;
    let inodesUsed = 0;
    for (const { size, inodes } of this.snapshots.values()) {
      usedBytes += size;
      inodesUsed += inodes;
    }
    for (const size of this.blobs.values()) {
      usedBytes += size;
      inodesUsed += 1;
    }
    this.totals = { usedBytes, inodesUsed };
  }
}

function forgetMissing<T>(cache: Map<string, T>, present: string[]): void {
  const keep = new Set(present);
  for (const name of cache.keys()) if (!keep.has(name)) cache.delete(name);
}
