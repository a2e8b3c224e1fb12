import { promises as fs } from 'node:fs';
import { join } from 'node:path';
import { fsyncDir, type Logger } from '@skiff/common';
import { blobKey, contentKeys, snapshotKey, type ContentGuard } from './content-guard.js';
import { TMP_PREFIX, type StoreLayout } from './store-layout.js';
import type { ImageRecord } from './types.js';
import type { Lease } from './leases.js';
import { sha256Hex } from './digests.js';

export interface GcResult {
  blobsRemoved: number;
  snapshotsRemoved: number;
}

/**
 * Deletes blobs and snapshots that no image record references and no lease holds, sparing content
 * a pull in progress has marked. Call with the guard's mutex held.
 */
export async function collectGarbage(
  layout: StoreLayout,
  guard: ContentGuard,
  images: readonly ImageRecord[],
  leases: readonly Lease[],
  logger: Logger,
): Promise<GcResult> {
  const referenced = new Set<string>();
  for (const image of images) for (const key of contentKeys(image)) referenced.add(key);
  for (const lease of leases) for (const chainId of lease.chainIds) referenced.add(snapshotKey(sha256Hex(chainId, 'leased chain ID')));
  const now = Date.now();
  let blobsRemoved = 0;
  let snapshotsRemoved = 0;
  for (const name of await fs.readdir(layout.blobsDir)) {
    const key = blobKey(name);
    if (referenced.has(key) || guard.isMarked(key, now)) continue;
    await fs.rm(join(layout.blobsDir, name), { recursive: true, force: true });
    blobsRemoved++;
  }
  for (const name of await fs.readdir(layout.snapshotsDir)) {
    if (name.startsWith(TMP_PREFIX)) continue; // an unpack under way
    const key = snapshotKey(name);
    if (referenced.has(key) || guard.isMarked(key, now)) continue;
    // Renamed away first, so a reader never finds a half-deleted tree under a live name.
    const doomed = layout.newSnapshotTmpDir('gc-');
    await fs.rename(join(layout.snapshotsDir, name), doomed);
    await fs.rm(doomed, { recursive: true, force: true });
    snapshotsRemoved++;
  }
  if (blobsRemoved > 0 || snapshotsRemoved > 0) {
    await fsyncDir(layout.blobsDir);
    await fsyncDir(layout.snapshotsDir);
    logger.info({ blobsRemoved, snapshotsRemoved }, 'image store garbage collected');
  }
  return { blobsRemoved, snapshotsRemoved };
}

/** Partial downloads and unpacks a killed writer left behind; never trusted, always removed. */
export async function removeDebris(layout: StoreLayout, logger: Logger): Promise<void> {
  let removed = 0;
  for (const name of await fs.readdir(layout.ingestDir)) {
    await fs.rm(join(layout.ingestDir, name), { recursive: true, force: true });
    removed++;
  }
  for (const name of await fs.readdir(layout.snapshotsDir)) {
    if (!name.startsWith(TMP_PREFIX)) continue;
    await fs.rm(join(layout.snapshotsDir, name), { recursive: true, force: true });
    removed++;
  }
  if (removed > 0) logger.info({ removed }, 'removed partial downloads and unpacks left by an earlier run');
}
