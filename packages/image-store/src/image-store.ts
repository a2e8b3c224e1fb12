import { randomBytes } from 'node:crypto';
import { createReadStream, promises as fs } from 'node:fs';
import { join } from 'node:path';
import type { Readable } from 'node:stream';
import { atomicWriteJson, fsyncDir, type Logger } from '@skiff/common';
import { parseDigest } from '@skiff/reference';
import { chainIds, childChainId } from './chain-id.js';
import { sha256Digest, sha256Hex } from './digests.js';
import { StoreError, errnoCode, errorMessage, isStoreError } from './errors.js';
import { ImageIndex, normalizeRecord, type ImageRecordInput } from './image-index.js';
import { IndexFileWatcher, loadIndexFile, saveIndexFile } from './index-file.js';
import { assertSupportedLayerType } from './media-types.js';
import { Mutex } from './mutex.js';
import { SharedOperations } from './shared-operations.js';
import { TarFormatError } from './tar/tar-header.js';
import type { Descriptor, ImageRecord, OciImageConfig, SnapshotMeta } from './types.js';
import { syncFilesystem } from './unpack/special-files.js';
import { unpackLayer, type UnpackLayerResult } from './unpack/unpack-layer.js';
import { StoreUsage } from './usage.js';
import { WriterLock } from './writer-lock.js';

export interface ImageStoreOptions {
  logger: Logger;
  /** The single writer (the image service) takes writer.lock; every other process opens as reader. */
  writer: boolean;
  /**
   * How long content written or looked up by a pull in progress is kept from garbage collection
   * while no image record references it yet. Default one hour.
   */
  gcGracePeriodMs?: number;
}

export interface LayerToIngest {
  desc: Descriptor;
  diffId: string;
  chainId: string;
}

export type LayerStreamOpener = () => Promise<NodeJS.ReadableStream | Readable>;

const TMP_PREFIX = '.tmp-';
const HEX_NAME = /^[a-f0-9]{64}$/;
const CONFIG_CACHE_LIMIT = 256;
const DEFAULT_GC_GRACE_MS = 60 * 60 * 1000;

function randomSuffix(): string {
  return randomBytes(8).toString('hex');
}

async function exists(path: string): Promise<boolean> {
  try {
    await fs.lstat(path);
    return true;
  } catch (err) {
    if (errnoCode(err) === 'ENOENT') return false;
    throw err;
  }
}

function assertSize(size: unknown, what: string): asserts size is number {
  if (typeof size !== 'number' || !Number.isSafeInteger(size) || size < 0) {
    throw new TypeError(`${what} size ${JSON.stringify(size)} is not a non-negative integer`);
  }
}

/**
 * The on-disk OCI image store: verified blobs, one unpacked overlayfs lower dir per layer chain,
 * and an index of image records. One writer process; any number of reader processes, which only
 * ever see records whose content is complete.
 */
export class ImageStore {
  private readonly logger: Logger;
  private readonly writer: boolean;
  private readonly gcGraceMs: number;
  private readonly blobsDir: string;
  private readonly ingestDir: string;
  private readonly snapshotsDir: string;
  private readonly indexPath: string;
  private readonly lockPath: string;
  private readonly usage: StoreUsage;
  private readonly configCache = new Map<string, OciImageConfig>();

  /** Writer only: the index as last persisted. */
  private index = ImageIndex.empty();
  /** Reader only. */
  private readonly watcher: IndexFileWatcher;
  private lock: WriterLock | undefined;
  private closed = false;

  /** Serializes commits, index changes and garbage collection against each other. */
  private readonly contentMutex = new Mutex();
  private readonly layerIngests = new SharedOperations();
  /** Blob and snapshot names a pull has touched but no record references yet, with when. */
  private readonly protectedContent = new Map<string, number>();
  private writesInFlight = 0;

  private constructor(readonly root: string, options: ImageStoreOptions) {
    this.logger = options.logger;
    this.writer = options.writer;
    this.gcGraceMs = options.gcGracePeriodMs ?? DEFAULT_GC_GRACE_MS;
    this.blobsDir = join(root, 'blobs', 'sha256');
    this.ingestDir = join(root, 'ingest');
    this.snapshotsDir = join(root, 'snapshots');
    this.indexPath = join(root, 'images.json');
    this.lockPath = join(root, 'writer.lock');
    this.usage = new StoreUsage(this.snapshotsDir, this.blobsDir);
    this.watcher = new IndexFileWatcher(this.indexPath);
  }

  static async open(root: string, options: ImageStoreOptions): Promise<ImageStore> {
    const store = new ImageStore(root, options);
    if (options.writer) await store.openAsWriter();
    return store;
  }

  private async openAsWriter(): Promise<void> {
    for (const dir of [this.root, this.blobsDir, this.ingestDir, this.snapshotsDir]) await fs.mkdir(dir, { recursive: true, mode: 0o755 });
    this.lock = await WriterLock.acquire(this.lockPath);
    try {
      await this.removeDebris();
      this.index = await loadIndexFile(this.indexPath);
      // Records are written only after their content is committed, so whatever no record
      // references now was left by a pull that never finished.
      await this.gc();
    } catch (err) {
      await this.lock.release();
      this.lock = undefined;
      throw err;
    }
    this.logger.info({ root: this.root, images: this.index.images.length }, 'image store opened for writing');
  }

  private async removeDebris(): Promise<void> {
    let removed = 0;
    for (const name of await fs.readdir(this.ingestDir)) {
      await fs.rm(join(this.ingestDir, name), { recursive: true, force: true });
      removed++;
    }
    for (const name of await fs.readdir(this.snapshotsDir)) {
      if (!name.startsWith(TMP_PREFIX)) continue;
      await fs.rm(join(this.snapshotsDir, name), { recursive: true, force: true });
      removed++;
    }
    if (removed > 0) this.logger.info({ removed }, 'removed partial downloads and unpacks left by an earlier run');
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    if (!this.writer) return;
    await this.layerIngests.abortAll(new StoreError('bad-layer', 'image store is closing'));
    // Let any commit or index write already under way finish before giving up the lock.
    await this.contentMutex.run(async () => undefined);
    await this.lock?.release();
    this.lock = undefined;
  }

  private requireWriter(operation: string): void {
    if (!this.writer) throw new Error(`ImageStore.${operation} needs the store opened as writer; this process opened ${this.root} as a reader`);
    if (this.closed) throw new Error(`ImageStore.${operation} called after close()`);
  }

  // ---- paths ----

  private blobPath(digest: string): string {
    return join(this.blobsDir, sha256Hex(digest, 'blob digest'));
  }

  private snapshotDir(chainId: string): string {
    return join(this.snapshotsDir, sha256Hex(chainId, 'layer chain ID'));
  }

  // ---- reading ----

  private async currentIndex(): Promise<ImageIndex> {
    return this.writer ? this.index : this.watcher.current();
  }

  async list(): Promise<ImageRecord[]> {
    return [...(await this.currentIndex()).images];
  }

  /** Throws InvalidReferenceError for a malformed reference. */
  async find(ref: string): Promise<ImageRecord | undefined> {
    return (await this.currentIndex()).find(ref)?.image;
  }

  async readBlob(digest: string): Promise<Buffer> {
    const path = this.blobPath(digest);
    try {
      return await fs.readFile(path);
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
    return image.layers.map((layer) => join(this.snapshotDir(layer.chainId), 'fs')).reverse();
  }

  async resolveRootfs(ref: string): Promise<{ image: ImageRecord; config: OciImageConfig; lowerDirs: string[] }> {
    const image = await this.find(ref);
    if (!image) throw new StoreError('not-found', `image ${JSON.stringify(ref)} is not in the image store`);
    const lowerDirs = this.snapshotDirs(image);
    const missing: string[] = [];
    await Promise.all(
      image.layers.map(async (layer) => {
        if (!(await exists(join(this.snapshotDir(layer.chainId), 'meta.json')))) missing.push(layer.chainId);
      }),
    );
    if (missing.length > 0) {
      throw new StoreError('not-found', `image ${image.id} (${JSON.stringify(ref)}) is missing unpacked layers ${missing.join(', ')}; pull it again`);
    }
    const config = await this.readConfig(image);
    return { image, config, lowerDirs };
  }

  async fsInfo(): Promise<{ mountpoint: string; usedBytes: number; inodesUsed: number }> {
    const totals = await this.usage.measure();
    return { mountpoint: this.root, ...totals };
  }

  // ---- writing ----

  private protect(key: string): void {
    this.protectedContent.set(key, Date.now());
  }

  private isProtected(key: string, now: number): boolean {
    const at = this.protectedContent.get(key);
    if (at === undefined) return false;
    if (now - at < this.gcGraceMs) return true;
    this.protectedContent.delete(key);
    return false;
  }

  async hasBlob(digest: string): Promise<boolean> {
    this.requireWriter('hasBlob');
    const path = this.blobPath(digest);
    return this.contentMutex.run(async () => {
      if (!(await exists(path))) return false;
      this.protect(`blob:${sha256Hex(digest, 'blob digest')}`);
      return true;
    });
  }

  async putBlob(desc: Descriptor, data: Buffer): Promise<void> {
    this.requireWriter('putBlob');
    const hex = sha256Hex(desc.digest, 'blob digest');
    assertSize(desc.size, `blob ${desc.digest}`);
    if (data.length !== desc.size) {
      throw new StoreError('size-mismatch', `blob ${desc.digest} failed verification: expected ${desc.size} bytes, got ${data.length}`);
    }
    const actual = sha256Digest(data);
    if (actual !== desc.digest) throw new StoreError('digest-mismatch', `blob ${desc.digest} failed verification: got digest ${actual}`);

    const target = join(this.blobsDir, hex);
    const tmp = join(this.ingestDir, `${hex}.${randomSuffix()}`);
    this.writesInFlight++;
    try {
      const alreadyStored = await this.contentMutex.run(async () => {
        if (!(await exists(target))) return false;
        this.protect(`blob:${hex}`);
        return true;
      });
      if (alreadyStored) return;
      const handle = await fs.open(tmp, 'wx', 0o644);
      try {
        await handle.writeFile(data);
        await handle.sync();
      } finally {
        await handle.close();
      }
      await this.contentMutex.run(async () => {
        await fs.rename(tmp, target);
        await fsyncDir(this.blobsDir);
        this.protect(`blob:${hex}`);
      });
    } catch (err) {
      await fs.rm(tmp, { force: true });
      throw err;
    } finally {
      this.writesInFlight--;
    }
  }

  /**
   * Makes sure the layer's snapshot exists: unpacks it from the blob if that is already here,
   * otherwise downloads through `open()` while unpacking. Concurrent calls for one chain ID share
   * the work. Nothing is committed unless blob digest, size and diff ID all match.
   */
  async ingestLayer(layer: LayerToIngest, open: LayerStreamOpener, opts: { signal?: AbortSignal } = {}): Promise<void> {
    this.requireWriter('ingestLayer');
    const { desc, diffId, chainId } = layer;
    sha256Hex(desc.digest, 'layer digest');
    sha256Hex(diffId, 'layer diff ID');
    sha256Hex(chainId, 'layer chain ID');
    assertSize(desc.size, `layer ${desc.digest}`);
    assertSupportedLayerType(desc.mediaType, desc.digest);
    try {
      await this.layerIngests.run(chainId, opts.signal, (signal) => this.ingestLayerOnce(layer, open, signal));
    } catch (err) {
      if (opts.signal?.aborted && !isStoreError(err)) {
        throw new StoreError('bad-layer', `ingest of layer ${desc.digest} was aborted`, { cause: err });
      }
      throw err;
    }
  }

  private async ingestLayerOnce(layer: LayerToIngest, open: LayerStreamOpener, signal: AbortSignal): Promise<void> {
    const { desc, diffId, chainId } = layer;
    const blobHex = sha256Hex(desc.digest, 'layer digest');
    const chainHex = sha256Hex(chainId, 'layer chain ID');
    const snapshotDir = join(this.snapshotsDir, chainHex);
    const blobPath = join(this.blobsDir, blobHex);

    const present = await this.contentMutex.run(async () => {
      if (!(await exists(join(snapshotDir, 'meta.json')))) return false;
      this.protect(`snapshot:${chainHex}`);
      if (await exists(blobPath)) this.protect(`blob:${blobHex}`);
      return true;
    });
    if (present) return;

    this.writesInFlight++;
    const started = Date.now();
    const tmpDir = join(this.snapshotsDir, `${TMP_PREFIX}${randomSuffix()}`);
    let ingestFile: string | undefined;
    try {
      await fs.mkdir(tmpDir, { mode: 0o700 });
      await fs.mkdir(join(tmpDir, 'fs'), { mode: 0o755 });
      const haveBlob = await exists(blobPath);
      if (!haveBlob) ingestFile = join(this.ingestDir, `${blobHex}.${randomSuffix()}`);
      signal.throwIfAborted();
      const source = haveBlob ? createReadStream(blobPath, { highWaterMark: 1024 * 1024 }) : await open();
      const result = await unpackLayer({
        source,
        expectedSize: desc.size,
        blobFile: ingestFile,
        fsDir: join(tmpDir, 'fs'),
        lowerDirs: () => this.lowerDirsOf(chainId, diffId),
        signal,
        layerDigest: desc.digest,
      });
      this.verifyLayer(layer, result);
      if (result.droppedXattrs > 0) {
        this.logger.warn({ layer: desc.digest, dropped: result.droppedXattrs }, 'layer carried overlayfs xattrs; they were not applied');
      }
      const meta: SnapshotMeta = { diffId, chainId, size: result.size, inodes: result.inodes };
      await atomicWriteJson(join(tmpDir, 'meta.json'), meta, 0o644);
      // One syncfs makes every unpacked file (and the blob) durable before the renames publish them.
      await syncFilesystem(tmpDir);
      signal.throwIfAborted();
      await this.contentMutex.run(async () => {
        if (ingestFile) {
          await fs.rename(ingestFile, blobPath);
          ingestFile = undefined;
          await fsyncDir(this.blobsDir);
        }
        await fs.rename(tmpDir, snapshotDir);
        await fsyncDir(this.snapshotsDir);
        this.protect(`blob:${blobHex}`);
        this.protect(`snapshot:${chainHex}`);
      });
      this.logger.info(
        { layer: desc.digest, chainId, bytes: result.blobSize, compression: result.compression, downloaded: !haveBlob, ms: Date.now() - started },
        'layer unpacked',
      );
    } catch (err) {
      await fs.rm(tmpDir, { recursive: true, force: true }).catch(() => undefined);
      if (ingestFile) await fs.rm(ingestFile, { force: true }).catch(() => undefined);
      throw this.layerError(layer, err, signal);
    } finally {
      this.writesInFlight--;
    }
  }

  private verifyLayer(layer: LayerToIngest, result: UnpackLayerResult): void {
    const { desc, diffId } = layer;
    if (result.blobSize !== desc.size) {
      throw new StoreError('size-mismatch', `layer ${desc.digest} failed verification: expected ${desc.size} bytes, got ${result.blobSize}`);
    }
    if (result.blobDigest !== desc.digest) {
      throw new StoreError('digest-mismatch', `layer ${desc.digest} failed verification: expected digest ${desc.digest}, got ${result.blobDigest}`);
    }
    if (result.diffId !== diffId) {
      throw new StoreError('digest-mismatch', `layer ${desc.digest} failed verification: expected diff ID ${diffId} (from the image config), got ${result.diffId}`);
    }
  }

  private layerError(layer: LayerToIngest, err: unknown, signal: AbortSignal): StoreError {
    const digest = layer.desc.digest;
    if (isStoreError(err)) {
      return err.message.includes(digest) ? err : new StoreError(err.kind, `layer ${digest}: ${err.message}`, { cause: err });
    }
    if (signal.aborted) return new StoreError('bad-layer', `ingest of layer ${digest} was aborted`, { cause: err });
    if (err instanceof TarFormatError) {
      return new StoreError(err.reason === 'unsupported' ? 'unsupported' : 'bad-layer', `layer ${digest} cannot be unpacked: ${err.message}`, { cause: err });
    }
    const code = errnoCode(err);
    if (code === 'Z_DATA_ERROR' || code === 'Z_BUF_ERROR' || /zstd/.test(errorMessage(err))) {
      return new StoreError('bad-layer', `layer ${digest} cannot be decompressed: ${errorMessage(err)}`, { cause: err });
    }
    return new StoreError('bad-layer', `layer ${digest} could not be downloaded and unpacked: ${errorMessage(err)}`, { cause: err });
  }

  /**
   * The fs/ dirs of the layers under `chainId`, top first, found by recomputing chain IDs (a layer's
   * parent P satisfies chain = sha256(P + " " + diffId)). Only needed for hard links into lower layers.
   */
  private async lowerDirsOf(chainId: string, diffId: string): Promise<string[]> {
    const dirs: string[] = [];
    let chain = chainId;
    let diff = diffId;
    while (chain !== diff) {
      const parent = await this.findParentChain(chain, diff);
      if (!parent) {
        throw new StoreError(
          'bad-layer',
          `layer with chain ID ${chainId} hard-links to files of a lower layer, but the layer below ${chain} is not in the store; ingest an image's layers bottom first`,
        );
      }
      const parentDir = this.snapshotDir(parent);
      dirs.push(join(parentDir, 'fs'));
      const meta = JSON.parse(await fs.readFile(join(parentDir, 'meta.json'), 'utf8')) as SnapshotMeta;
      chain = parent;
      diff = meta.diffId;
    }
    return dirs;
  }

  private async findParentChain(chain: string, diff: string): Promise<string | undefined> {
    for (const candidate of this.layerIngests.keys()) {
      if (candidate !== chain && childChainId(candidate, diff) === chain) {
        await this.layerIngests.pending(candidate);
        return (await exists(join(this.snapshotDir(candidate), 'meta.json'))) ? candidate : undefined;
      }
    }
    for (const name of await fs.readdir(this.snapshotsDir)) {
      if (!HEX_NAME.test(name)) continue;
      const candidate = `sha256:${name}`;
      if (childChainId(candidate, diff) === chain) return candidate;
    }
    return undefined;
  }

  async addImage(input: ImageRecordInput): Promise<ImageRecord> {
    this.requireWriter('addImage');
    const record = normalizeRecord(input);
    const expectedChain = chainIds(record.layers.map((layer) => layer.diffId));
    record.layers.forEach((layer, i) => {
      if (layer.chainId !== expectedChain[i]) {
        throw new StoreError('bad-layer', `image ${record.id} layer ${i} has chain ID ${layer.chainId}, but its diff IDs give ${expectedChain[i]}`);
      }
    });
    return this.contentMutex.run(async () => {
      const missing: string[] = [];
      if (!(await exists(this.blobPath(record.id)))) missing.push(`config blob ${record.id}`);
      for (const layer of record.layers) {
        if (!(await exists(this.blobPath(layer.digest)))) missing.push(`layer blob ${layer.digest}`);
        if (!(await exists(join(this.snapshotDir(layer.chainId), 'meta.json')))) missing.push(`unpacked layer ${layer.chainId}`);
      }
      if (missing.length > 0) {
        throw new StoreError('not-found', `cannot record image ${record.id}: ${missing.join(', ')} not in the store (store the content before the record)`);
      }
      const { index, image } = this.index.withImage(record, new Date());
      await saveIndexFile(this.indexPath, index);
      this.index = index;
      // The record now keeps this content; while other pulls are under way their marks must stay.
      if (this.writesInFlight === 0) {
        for (const key of this.contentKeys(image)) this.protectedContent.delete(key);
      }
      this.logger.info({ id: image.id, tags: image.repoTags }, 'image recorded');
      return image;
    });
  }

  async removeImage(ref: string): Promise<'removed' | 'untagged' | 'absent'> {
    this.requireWriter('removeImage');
    const outcome = await this.contentMutex.run(async () => {
      const match = this.index.find(ref);
      if (!match) return 'absent' as const;
      if (match.by === 'tag' && match.tag !== undefined && match.image.repoTags.length > 1) {
        const index = this.index.withoutTag(match.image.id, match.tag);
        await saveIndexFile(this.indexPath, index);
        this.index = index;
        this.logger.info({ id: match.image.id, tag: match.tag }, 'image untagged');
        return 'untagged' as const;
      }
      const index = this.index.withoutImage(match.image.id);
      await saveIndexFile(this.indexPath, index);
      this.index = index;
      this.configCache.delete(match.image.id);
      this.logger.info({ id: match.image.id, ref }, 'image removed');
      return 'removed' as const;
    });
    if (outcome === 'removed') await this.gc();
    return outcome;
  }

  /** GC keys of everything a record keeps: config, manifest, what its repo digests name, layers. */
  private contentKeys(image: ImageRecord): string[] {
    const blobDigests = [image.id, image.manifestDigest, ...image.repoDigests.map((r) => r.slice(r.indexOf('@') + 1)), ...image.layers.map((l) => l.digest)];
    const keys: string[] = [];
    for (const digest of blobDigests) {
      const parsed = parseDigest(digest);
      if (parsed?.algorithm === 'sha256') keys.push(`blob:${parsed.hex}`);
    }
    for (const layer of image.layers) {
      const parsed = parseDigest(layer.chainId);
      if (parsed?.algorithm === 'sha256') keys.push(`snapshot:${parsed.hex}`);
    }
    return keys;
  }

  /**
   * Deletes blobs and snapshots that no image record references, except content a pull in
   * progress has touched within the grace period.
   */
  async gc(): Promise<{ blobsRemoved: number; snapshotsRemoved: number }> {
    this.requireWriter('gc');
    return this.contentMutex.run(async () => {
      const referenced = new Set<string>();
      for (const image of this.index.images) for (const key of this.contentKeys(image)) referenced.add(key);
      const now = Date.now();
      let blobsRemoved = 0;
      let snapshotsRemoved = 0;
      for (const name of await fs.readdir(this.blobsDir)) {
        const key = `blob:${name}`;
        if (referenced.has(key) || this.isProtected(key, now)) continue;
        await fs.rm(join(this.blobsDir, name), { recursive: true, force: true });
        blobsRemoved++;
      }
      for (const name of await fs.readdir(this.snapshotsDir)) {
        if (name.startsWith(TMP_PREFIX)) continue; // an unpack in progress
        const key = `snapshot:${name}`;
        if (referenced.has(key) || this.isProtected(key, now)) continue;
        // Renamed away first so readers never see a half-deleted tree under a live name.
        const doomed = join(this.snapshotsDir, `${TMP_PREFIX}gc-${randomSuffix()}`);
        await fs.rename(join(this.snapshotsDir, name), doomed);
        await fs.rm(doomed, { recursive: true, force: true });
        snapshotsRemoved++;
      }
      if (blobsRemoved > 0 || snapshotsRemoved > 0) {
        await fsyncDir(this.blobsDir);
        await fsyncDir(this.snapshotsDir);
        this.logger.info({ blobsRemoved, snapshotsRemoved }, 'image store garbage collected');
      }
      return { blobsRemoved, snapshotsRemoved };
    });
  }
}

