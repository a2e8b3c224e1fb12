import { randomBytes } from 'node:crypto';
import { promises as fs } from 'node:fs';
import { dirname, join } from 'node:path';
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

/**
 * Makes a store written by an older version root-only: the root and its directories 0700, the
 * index, lock, blobs and leases 0600. Snapshot trees keep their own modes (they are the images'
 * files); their parent directory is what keeps them private.
 */
export async function restrictStoreModes(layout: StoreLayout): Promise<void> {
  const dirs = [layout.root, dirname(layout.blobsDir), layout.blobsDir, layout.ingestDir, layout.snapshotsDir, layout.leasesDir];
  for (const dir of dirs) await chmodIfPresent(dir, 0o700);
  for (const file of [layout.indexPath, layout.lockPath]) await chmodIfPresent(file, 0o600);
  for (const dir of [layout.blobsDir, layout.leasesDir]) {
    for (const name of await readdirIfPresent(dir)) await chmodIfPresent(join(dir, name), 0o600);
  }
}

async function chmodIfPresent(path: string, mode: number): Promise<void> {
  try {
    const stats = await fs.lstat(path);
    if (!stats.isSymbolicLink() && (stats.mode & 0o7777) !== mode) await fs.chmod(path, mode);
  } catch (err) {
    if (errnoCode(err) !== 'ENOENT') throw err;
  }
}

async function readdirIfPresent(dir: string): Promise<string[]> {
  try {
    return await fs.readdir(dir);
  } catch (err) {
    if (errnoCode(err) === 'ENOENT') return [];
    throw err;
  }
}

export function randomSuffix(): string {
  return randomBytes(8).toString('hex');
}
