import { parseDigest } from '@skiff/reference';
import { Mutex } from '@skiff/common';
import type { ImageRecord } from './types.js';

export function blobKey(hex: string): string {
  return `blob:${hex}`;
}

export function snapshotKey(hex: string): string {
  return `snapshot:${hex}`;
}

/**
 * GC keys of everything a record keeps: config, manifest, what its repo digests name, and its
 * layers' snapshots. Layer blobs are not kept once unpacked, so no record keeps one.
 */
export function contentKeys(image: ImageRecord): string[] {
  const blobDigests = [image.id, image.manifestDigest, ...image.repoDigests.map((r) => r.slice(r.indexOf('@') + 1))];
  const keys: string[] = [];
  for (const digest of blobDigests) {
    const parsed = parseDigest(digest);
    if (parsed?.algorithm === 'sha256') keys.push(blobKey(parsed.hex));
  }
  for (const layer of image.layers) {
    const parsed = parseDigest(layer.chainId);
    if (parsed?.algorithm === 'sha256') keys.push(snapshotKey(parsed.hex));
  }
  return keys;
}

/**
 * Keeps garbage collection from deleting what a pull is building on. A pull commits blobs and
 * snapshots (or finds them present) before it writes the image record; in between, nothing
 * references them. Content touched that way is marked, and collection spares marks younger than
 * the grace period. The mutex orders commits, index writes and collection.
 */
export class ContentGuard {
  readonly mutex = new Mutex();
  private readonly marks = new Map<string, number>();
  private writes = 0;

  constructor(private readonly gracePeriodMs: number) {}

  mark(key: string): void {
    this.marks.set(key, Date.now());
  }

  isMarked(key: string, now: number): boolean {
    const at = this.marks.get(key);
    if (at === undefined) return false;
    if (now - at < this.gracePeriodMs) return true;
    this.marks.delete(key);
    return false;
  }

  /**
   * Called once a record references the content. While other writes are under way a mark may be
   * theirs too, so it is left to expire instead.
   */
  releaseIfIdle(keys: Iterable<string>): void {
    if (this.writes > 0) return;
    for (const key of keys) this.marks.delete(key);
  }

  async whileWriting<T>(operation: () => Promise<T>): Promise<T> {
    this.writes++;
    try {
      return await operation();
    } finally {
      this.writes--;
    }
  }
}
