import { randomBytes } from 'node:crypto';
import { promises as fs } from 'node:fs';
import { join } from 'node:path';
import { errnoCode } from '@skiff/common';
import { sha256Hex } from './digests.js';

/** Prefix of work-in-progress names under snapshots/ (unpacks under way, trees being deleted). */
export const TMP_PREFIX = '.tmp-';
export const HEX_NAME = /^[a-f0-9]{64}$/;

/** Where everything lives under the store root. */
export class StoreLayout {
  readonly blobsDir: string;
  readonly ingestDir: string;
  readonly snapshotsDir: string;
  readonly indexPath: string;
  readonly lockPath: string;
  readonly leasesDir: string;

  constructor(readonly root: string) {
    this.blobsDir = join(root, 'blobs', 'sha256');
    this.ingestDir = join(root, 'ingest');
    this.snapshotsDir = join(root, 'snapshots');
    this.indexPath = join(root, 'images.json');
    this.lockPath = join(root, 'writer.lock');
    this.leasesDir = join(root, 'leases');
  }

  blobPath(digest: string): string {
    return join(this.blobsDir, sha256Hex(digest, 'blob digest'));
  }

  snapshotDir(chainId: string): string {
    return join(this.snapshotsDir, sha256Hex(chainId, 'layer chain ID'));
  }

  /** The unpacked tree: an overlayfs lower dir. */
  snapshotFsDir(chainId: string): string {
    return join(this.snapshotDir(chainId), 'fs');
  }

  /** Written last inside a snapshot, so its presence means the snapshot is complete. */
  snapshotMetaPath(chainId: string): string {
    return join(this.snapshotDir(chainId), 'meta.json');
  }

  newSnapshotTmpDir(label = ''): string {
    return join(this.snapshotsDir, `${TMP_PREFIX}${label}${randomSuffix()}`);
  }

  newIngestFile(digest: string): string {
    return join(this.ingestDir, `${sha256Hex(digest, 'blob digest')}.${randomSuffix()}`);
  }
}

export function randomSuffix(): string {
  return randomBytes(8).toString('hex');
}

export async function exists(path: string): Promise<boolean> {
  try {
    await fs.lstat(path);
    return true;
  } catch (err) {
    if (errnoCode(err) === 'ENOENT') return false;
    throw err;
  }
}

export async function fsyncFile(path: string): Promise<void> {
  const handle = await fs.open(path, 'r');
  try {
    await handle.sync();
  } finally {
    await handle.close();
  }
}
