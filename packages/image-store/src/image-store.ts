import { promises as fs } from 'node:fs';
import { type Logger, errnoCode, errorMessage, pathExists } from '@skiff/common';
import { chainIds } from './chain-id.js';
import { ContentGuard, blobKey, contentKeys } from './content-guard.js';
import { sha256Digest, sha256Hex } from './digests.js';
import { StoreError } from './errors.js';
import { collectGarbage, removeDebris, type GcResult } from './garbage-collector.js';
import { ImageIndex, normalizeRecord, type ImageRecordInput } from './image-index.js';
import { IndexFileWatcher, loadIndexFile, saveIndexFile } from './index-file.js';
import { resolveLimits, statfsFreeBytes, type ExtractionLimits, type FreeSpaceReader } from './limits.js';
import { LayerIngest, assertSize, type LayerStreamOpener, type LayerToIngest } from './layer-ingest.js';
import { StoreLayout, restrictStoreModes } from './store-layout.js';
import type { Descriptor, ImageRecord, OciImageConfig } from './types.js';
import { StoreUsage } from './usage.js';
import { WriterLock } from './writer-lock.js';
import { DurabilityBatch } from './durability.js';
import { recordLayerBlobsInSnapshots } from './layer-blob-migration.js';
import { LeaseDirectory, type Lease } from './leases.js';

export type { LayerStreamOpener, LayerToIngest } from './layer-ingest.js';

export interface ImageStoreOptions {
  logger: Logger;
  /** The single writer (the image service) takes writer.lock; every other process opens as reader. */
  writer: boolean;
  /**
   * How long content that a pull in progress has stored or looked up is spared by garbage
   * collection while no image record references it yet. Default one hour.
   */
  gcGracePeriodMs?: number;
  /** What one layer may cost while it is unpacked; unset ones take DEFAULT_EXTRACTION_LIMITS. */
  limits?: Partial<ExtractionLimits>;
  /** Reads free space on the store's filesystem (statfs by default). */
  freeBytes?: FreeSpaceReader;
  /** Makes the filesystems holding `paths` durable (`sync -f` by default). */
  syncFilesystems?: (paths: readonly string[]) => Promise<void>;
}

const CONFIG_CACHE_LIMIT = 256;
const DEFAULT_GC_GRACE_MS = 60 * 60 * 1000;

/**
 * The on-disk OCI image store: verified blobs, one unpacked overlayfs lower dir per layer chain,
 * and an index of image records. One writer process; any number of reader processes, which only
 * ever see records whose content is complete.
 */
export class ImageStore {
  private readonly logger: Logger;
  private readonly writer: boolean;
  private readonly layout: StoreLayout;
  private readonly usage: StoreUsage;
  private readonly configCache = new Map<string, OciImageConfig>();
  private readonly guard: ContentGuard;
  private readonly layers: LayerIngest;
  private readonly leases: LeaseDirectory;
  /** Content published since the last sync; synced before a record refers to it. */
  private readonly durable: DurabilityBatch;

  /** Writer only: the index as last persisted. */
  private index = ImageIndex.empty();
  /** Reader only: follows the index file. */
  private readonly watcher: IndexFileWatcher;
  private lock: WriterLock | undefined;
  private closed = false;

  private constructor(readonly root: string, options: ImageStoreOptions) {
    this.logger = options.logger;
    this.writer = options.writer;
    this.layout = new StoreLayout(root);
    this.usage = new StoreUsage(this.layout.snapshotsDir, this.layout.blobsDir);
    this.watcher = new IndexFileWatcher(this.layout.indexPath);
    this.guard = new ContentGuard(options.gcGracePeriodMs ?? DEFAULT_GC_GRACE_MS);
    this.durable = new DurabilityBatch([this.layout.blobsDir, this.layout.snapshotsDir], options.syncFilesystems);
    this.layers = new LayerIngest(this.layout, this.guard, this.logger, resolveLimits(options.limits), options.freeBytes ?? statfsFreeBytes, this.durable);
    this.leases = new LeaseDirectory(this.layout.leasesDir);
  }

  /**
   * Everything in the store is root-only (0700 directories, 0600 files): blobs hold private
   * images' content. A writer takes the lock, brings an older store's modes in line, removes what a killed writer left in ingest/ and snapshots/.tmp-*,
   * then collects content no image references (records are written only after their content is
   * committed, so such content is debris of pulls that never finished).
   */
  static async open(root: string, options: ImageStoreOptions): Promise<ImageStore> {
    const store = new ImageStore(root, options);
    if (options.writer) await store.openAsWriter();
    return store;
  }

  private async openAsWriter(): Promise<void> {
    const { layout } = this;
    for (const dir of [layout.root, layout.blobsDir, layout.ingestDir, layout.snapshotsDir]) await fs.mkdir(dir, { recursive: true, mode: 0o700 });
    this.lock = await WriterLock.acquire(layout.lockPath);
    try {
      await restrictStoreModes(layout);
      await removeDebris(layout, this.logger);
      this.index = await loadIndexFile(layout.indexPath);
      await recordLayerBlobsInSnapshots(layout, this.index.images, this.logger);
      await this.gc();
    } catch (err) {
      await this.lock.release();
      this.lock = undefined;
      throw err;
    }
    this.logger.info({ root: this.root, images: this.index.images.length }, 'image store opened for writing');
  }

  /** Aborts ingests still running and releases the writer lock. */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    if (!this.writer) return;
    await this.layers.abortAll(new StoreError('bad-layer', 'image store is closing'));
    // Let a commit or index write already under way finish before giving up the lock.
    await this.guard.mutex.run(async () => undefined);
    await this.lock?.release();
    this.lock = undefined;
  }

  private requireWriter(operation: string): void {
    if (!this.writer) throw new Error(`ImageStore.${operation} needs the store opened as writer; this process opened ${this.root} as a reader`);
    if (this.closed) throw new Error(`ImageStore.${operation} called after close()`);
  }

  // ---- reading (writer and readers) ----

  private async currentIndex(): Promise<ImageIndex> {
    return this.writer ? this.index : this.watcher.current();
  }

  async list(): Promise<ImageRecord[]> {
    return [...(await this.currentIndex()).images];
  }

  /**
   * By id ("sha256:<hex>" or bare hex), by tag (normalized: "busybox" finds
   * docker.io/library/busybox:latest) or by repo digest. Throws InvalidReferenceError.
   */
  async find(ref: string): Promise<ImageRecord | undefined> {
    return (await this.currentIndex()).find(ref)?.image;
  }

  async readBlob(digest: string): Promise<Buffer> {
    try {
      return await fs.readFile(this.layout.blobPath(digest));
    } catch (err) {
      if (errnoCode(err) === 'ENOENT') throw new StoreError('not-found', `blob ${digest} is not in the image store at ${this.root}`);
      throw err;
    }
  }

  async readConfig(image: ImageRecord): Promise<OciImageConfig> {
    const cached = this.configCache.get(image.id);
    if (cached) return cached;
    const data = await this.readBlob(image.id);
    let config: OciImageConfig;
    try {
      config = JSON.parse(data.toString('utf8')) as OciImageConfig;
    } catch (err) {
      throw new StoreError('unsupported', `image config ${image.id} is not valid JSON: ${errorMessage(err)}`);
    }
    if (config === null || typeof config !== 'object' || !config.rootfs || !Array.isArray(config.rootfs.diff_ids)) {
      throw new StoreError('unsupported', `image config ${image.id} is not an OCI image config (no rootfs.diff_ids)`);
    }
    if (this.configCache.size >= CONFIG_CACHE_LIMIT) this.configCache.delete(this.configCache.keys().next().value!);
    this.configCache.set(image.id, config);
    return config;
  }

  /** The unpacked layer dirs, top layer first (overlayfs lowerdir order). */
  snapshotDirs(image: ImageRecord): string[] {
    return image.layers.map((layer) => this.layout.snapshotFsDir(layer.chainId)).reverse();
  }

  async resolveRootfs(ref: string): Promise<{ image: ImageRecord; config: OciImageConfig; lowerDirs: string[] }> {
    const image = await this.find(ref);
    if (!image) throw new StoreError('not-found', `image ${JSON.stringify(ref)} is not in the image store`);
    const present = await Promise.all(image.layers.map((layer) => pathExists(this.layout.snapshotMetaPath(layer.chainId))));
    const missing = image.layers.filter((_, i) => !present[i]).map((layer) => layer.chainId);
    if (missing.length > 0) {
      throw new StoreError('not-found', `image ${image.id} (${JSON.stringify(ref)}) is missing unpacked layers ${missing.join(', ')}; pull it again`);
    }
    const config = await this.readConfig(image);
    return { image, config, lowerDirs: this.snapshotDirs(image) };
  }

  /**
   * Keeps an image's snapshots alive for `holder` (readers may call this), then checks they are
   * still there: a collection that ran just before the lease was written would have taken them.
   * Returns the lower dirs, top layer first.
   */
  async acquireLease(holder: string, image: ImageRecord): Promise<string[]> {
    const { lowerDirs, durable } = await this.acquireLeaseNow(holder, image);
    await durable;
    return lowerDirs;
  }

  /**
   * acquireLease, answered once the lease holds: `durable` resolves once it is on disk too. Wait
   * for it before anything on disk depends on the lease (until then, after a crash of the machine,
   * the lease may be lost and its snapshots collected).
   */
  async acquireLeaseNow(holder: string, image: ImageRecord): Promise<{ lowerDirs: string[]; durable: Promise<void> }> {
    const { durable } = await this.leases.writeNow({ holder, imageId: image.id, chainIds: image.layers.map((l) => l.chainId) });
    const present = await Promise.all(image.layers.map((layer) => pathExists(this.layout.snapshotMetaPath(layer.chainId))));
    if (present.includes(false)) {
      await durable.catch(() => undefined);
      await this.leases.remove(holder);
      throw new StoreError('not-found', `image ${image.id} was removed while it was being prepared for ${holder}; pull it again`);
    }
    return { lowerDirs: this.snapshotDirs(image), durable };
  }

  async releaseLease(holder: string): Promise<void> {
    await this.leases.remove(holder);
  }

  listLeases(): Promise<Lease[]> {
    return this.leases.list();
  }

  /** Bytes and inodes of committed content, from meta.json counters and blob sizes (cached). */
  async fsInfo(): Promise<{ mountpoint: string; usedBytes: number; inodesUsed: number }> {
    const totals = await this.usage.measure();
    return { mountpoint: this.root, ...totals };
  }

  // ---- writing (writer only) ----

  async hasBlob(digest: string): Promise<boolean> {
    this.requireWriter('hasBlob');
    const path = this.layout.blobPath(digest);
    return this.guard.mutex.run(async () => {
      if (!(await pathExists(path))) return false;
      this.guard.mark(blobKey(sha256Hex(digest, 'blob digest')));
      return true;
    });
  }

  /** Verifies digest and size, then writes through ingest/ (write, rename; synced before a record refers to it). */
  async putBlob(desc: Descriptor, data: Buffer): Promise<void> {
    this.requireWriter('putBlob');
    const key = blobKey(sha256Hex(desc.digest, 'blob digest'));
    assertSize(desc.size, `blob ${desc.digest}`);
    if (data.length !== desc.size) {
      throw new StoreError('size-mismatch', `blob ${desc.digest} failed verification: expected ${desc.size} bytes, got ${data.length}`);
    }
    const actual = sha256Digest(data);
    if (actual !== desc.digest) throw new StoreError('digest-mismatch', `blob ${desc.digest} failed verification: got digest ${actual}`);

    const target = this.layout.blobPath(desc.digest);
    await this.guard.whileWriting(async () => {
      if (await this.hasBlob(desc.digest)) return;
      const tmp = this.layout.newIngestFile(desc.digest);
      try {
        await fs.writeFile(tmp, data, { flag: 'wx', mode: 0o600 });
        // Published unsynced, like layers: addImage syncs before the record refers to it.
        await this.guard.mutex.run(async () => {
          await fs.rename(tmp, target);
          this.guard.mark(key);
          this.durable.notePublished();
        });
      } catch (err) {
        await fs.rm(tmp, { force: true });
        throw err;
      }
    });
  }

  /**
   * Makes sure the layer's snapshot exists: if its chain is not unpacked yet, it is copied from
   * the same layer's snapshot under another parent when that tree does not depend on the layers
   * below, or else downloaded through `open()`, verified and unpacked in one pass (the compressed
   * bytes are not kept).
   * Concurrent calls for one chain ID share the work. Nothing is committed unless blob digest,
   * size and diff ID all match; on any failure nothing is left behind.
   */
  async ingestLayer(layer: LayerToIngest, open: LayerStreamOpener, opts: { signal?: AbortSignal } = {}): Promise<void> {
    this.requireWriter('ingestLayer');
    await this.layers.ingest(layer, open, opts.signal);
  }

  /**
   * Records an image whose content is all in the store. Tags move: another image holding one of
   * the record's tags loses it. Recording an id again merges tags and digests and keeps createdAt.
   */
  async addImage(input: ImageRecordInput): Promise<ImageRecord> {
    this.requireWriter('addImage');
    const record = normalizeRecord(input);
    const expectedChain = chainIds(record.layers.map((layer) => layer.diffId));
    record.layers.forEach((layer, i) => {
      if (layer.chainId !== expectedChain[i]) {
        throw new StoreError('bad-layer', `image ${record.id} layer ${i} has chain ID ${layer.chainId}, but its diff IDs give ${expectedChain[i]}`);
      }
    });
    // Whatever this process published unsynced (this record's content among it) becomes durable
    // before the record is written: one sync for all the layers of a pull.
    await this.durable.flush();
    return this.guard.mutex.run(async () => {
      await this.assertContentPresent(record);
      const { index, image } = this.index.withImage(record, new Date());
      await saveIndexFile(this.layout.indexPath, index);
      this.index = index;
      this.guard.releaseIfIdle(contentKeys(image));
      this.logger.info({ id: image.id, tags: image.repoTags }, 'image recorded');
      return image;
    });
  }

  private async assertContentPresent(record: ImageRecordInput): Promise<void> {
    const missing: string[] = [];
    if (!(await pathExists(this.layout.blobPath(record.id)))) missing.push(`config blob ${record.id}`);
    for (const layer of record.layers) {
      if (!(await pathExists(this.layout.snapshotMetaPath(layer.chainId)))) missing.push(`unpacked layer ${layer.chainId}`);
    }
    if (missing.length > 0) {
      throw new StoreError('not-found', `cannot record image ${record.id}: ${missing.join(', ')} not in the store (store the content before the record)`);
    }
  }

  /**
   * By a tag of an image that has other tags: only that tag goes ('untagged'). By id, repo digest
   * or last tag: the record goes and unshared content is collected ('removed').
   * `collectInBackground`: return once the index no longer holds the image and collect after; the
   * collection runs under the store's mutex (so before any later write) and, after a crash, at the
   * next open.
   */
  async removeImage(ref: string, options: { collectInBackground?: boolean } = {}): Promise<'removed' | 'untagged' | 'absent'> {
    this.requireWriter('removeImage');
    const outcome = await this.guard.mutex.run(async () => {
      const match = this.index.find(ref);
      if (!match) return 'absent' as const;
      const { image } = match;
      if (match.by === 'tag' && match.tag !== undefined && image.repoTags.length > 1) {
        const index = this.index.withoutTag(image.id, match.tag);
        await saveIndexFile(this.layout.indexPath, index);
        this.index = index;
        this.logger.info({ id: image.id, tag: match.tag }, 'image untagged');
        return 'untagged' as const;
      }
      const index = this.index.withoutImage(image.id);
      await saveIndexFile(this.layout.indexPath, index);
      this.index = index;
      this.configCache.delete(image.id);
      this.logger.info({ id: image.id, ref }, 'image removed');
      return 'removed' as const;
    });
    if (outcome !== 'removed') return outcome;
    const collecting = this.gc();
    if (options.collectInBackground) collecting.catch((err: unknown) => this.logger.error({ err: errorMessage(err) }, 'collecting after an image removal failed'));
    else await collecting;
    return outcome;
  }

  /** Deletes blobs and snapshots no image references (sparing those a pull in progress uses); layer blobs are never referenced. */
  async gc(): Promise<GcResult> {
    this.requireWriter('gc');
    return this.guard.mutex.run(async () => collectGarbage(this.layout, this.guard, this.index.images, await this.leases.list(), this.logger));
  }
}
