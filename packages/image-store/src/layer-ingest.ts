import { promises as fs } from 'node:fs';
import type { Readable } from 'node:stream';
import { StepTimer, type Logger, errnoCode, errorMessage, pathExists, runCommand } from '@skiff/common';
import { childChainId } from './chain-id.js';
import { snapshotKey, type ContentGuard } from './content-guard.js';
import { sha256Hex } from './digests.js';
import { StoreError, isStoreError } from './errors.js';
import { LIMIT_KEYS, LimitError, SpaceReserve, type ExtractionLimits, type FreeSpaceReader } from './limits.js';
import { assertSupportedLayerType } from './media-types.js';
import { SharedOperations } from './shared-operations.js';
import { HEX_NAME, type StoreLayout } from './store-layout.js';
import type { DurabilityBatch } from './durability.js';
import { TarFormatError } from './tar/tar-header.js';
import type { Descriptor, SnapshotMeta } from './types.js';
import { unpackLayer, type UnpackLayerResult } from './unpack/unpack-layer.js';
import { EarlyWriteback } from './writeback.js';

export interface LayerToIngest {
  desc: Descriptor;
  diffId: string;
  chainId: string;
}

export type LayerStreamOpener = () => Promise<NodeJS.ReadableStream | Readable>;

export function assertSize(size: unknown, what: string): asserts size is number {
  if (typeof size !== 'number' || !Number.isSafeInteger(size) || size < 0) {
    throw new TypeError(`${what} size ${JSON.stringify(size)} is not a non-negative integer`);
  }
}

/**
 * Brings layers into the store: downloads, verifies and unpacks in one pass, commits only
 * verified content (the unpacked tree, not the compressed blob), and leaves nothing behind on failure.
 */
export class LayerIngest {
  /** Unpacks, one per chain ID at a time. */
  private readonly snapshots = new SharedOperations();
  /** Writes finished files out while the pull goes on; the sync before the record is what counts. */
  private readonly writeback = new EarlyWriteback();

  constructor(
    private readonly layout: StoreLayout,
    private readonly guard: ContentGuard,
    private readonly logger: Logger,
    private readonly limits: ExtractionLimits,
    private readonly freeBytes: FreeSpaceReader,
    private readonly durable: DurabilityBatch,
  ) {}

  async ingest(layer: LayerToIngest, open: LayerStreamOpener, callerSignal: AbortSignal | undefined): Promise<void> {
    const { desc, diffId, chainId } = layer;
    sha256Hex(desc.digest, 'layer digest');
    sha256Hex(diffId, 'layer diff ID');
    sha256Hex(chainId, 'layer chain ID');
    assertSize(desc.size, `layer ${desc.digest}`);
    assertSupportedLayerType(desc.mediaType, desc.digest);
    try {
      await this.snapshots.run(chainId, callerSignal, (signal) => this.ingestOnce(layer, open, signal));
    } catch (err) {
      if (callerSignal?.aborted && !isStoreError(err)) {
        throw new StoreError('bad-layer', `ingest of layer ${desc.digest} was aborted`, { cause: err });
      }
      throw err;
    }
  }

  async abortAll(reason: unknown): Promise<void> {
    await this.snapshots.abortAll(reason);
    await this.writeback.idle();
  }

  /**
   * A snapshot of the chain is all a layer needs, whichever blob it was unpacked from: the chain ID
   * names the uncompressed content (a gzip and a zstd build of one layer share it), so a layer
   * already unpacked is not downloaded again, by any image.
   */
  private async isPresent(chainId: string): Promise<boolean> {
    return this.guard.mutex.run(async () => {
      if (!(await pathExists(this.layout.snapshotMetaPath(chainId)))) return false;
      this.guard.mark(snapshotKey(sha256Hex(chainId, 'chain ID')));
      return true;
    });
  }

  private async ingestOnce(layer: LayerToIngest, open: LayerStreamOpener, signal: AbortSignal): Promise<void> {
    if (await this.isPresent(layer.chainId)) return;
    await this.guard.whileWriting(async () => {
      const twin = await this.standaloneTwin(layer);
      if (twin) await this.copyTwin(layer, twin, signal);
      else await this.fetchAndCommit(layer, open, signal);
    });
  }

  /**
   * A snapshot of the same layer (diff ID) under another parent whose tree does not depend on the
   * layers below it: copying it makes this chain's snapshot without downloading the layer again.
   * Marked, so that collection spares it while it is copied.
   */
  private async standaloneTwin(layer: LayerToIngest): Promise<SnapshotMeta | undefined> {
    for (const name of await fs.readdir(this.layout.snapshotsDir)) {
      if (!HEX_NAME.test(name) || `sha256:${name}` === layer.chainId) continue;
      const meta = await readSnapshotMeta(this.layout.snapshotMetaPath(`sha256:${name}`));
      if (meta?.diffId !== layer.diffId || meta.standsAlone !== true) continue;
      const held = await this.guard.mutex.run(async () => {
        if (!(await pathExists(this.layout.snapshotMetaPath(meta.chainId)))) return false;
        this.guard.mark(snapshotKey(name));
        return true;
      });
      if (held) return meta;
    }
    return undefined;
  }

  private async copyTwin(layer: LayerToIngest, twin: SnapshotMeta, signal: AbortSignal): Promise<void> {
    const { desc, chainId } = layer;
    const tmpDir = this.layout.newSnapshotTmpDir();
    try {
      await fs.mkdir(tmpDir, { mode: 0o700 });
      await new SpaceReserve(this.layout.root, this.limits.minFreeBytes, this.freeBytes).check(twin.size);
      signal.throwIfAborted();
      // cp -a: owners, modes, times, xattrs (the opaque markers among them), whiteout devices and
      // hard links as they are; symbolic links are copied as links, never followed.
      const copied = await runCommand('cp', ['-a', '--no-target-directory', this.layout.snapshotFsDir(twin.chainId), `${tmpDir}/fs`]);
      if (copied.code !== 0) throw new StoreError('bad-layer', `copying the unpacked layer ${twin.chainId} failed: ${copied.stderr.trim()}`);
      await this.publish(tmpDir, { ...twin, chainId }, signal);
      this.logger.info({ layer: desc.digest, chainId, from: twin.chainId }, 'layer copied from its snapshot under another parent');
    } catch (err) {
      await fs.rm(tmpDir, { recursive: true, force: true }).catch(() => undefined);
      throw describeFailure(layer, err, signal);
    }
  }

  /** Downloads, verifies and unpacks in one pass; the compressed bytes are hashed and dropped, never stored. */
  private async fetchAndCommit(layer: LayerToIngest, open: LayerStreamOpener, signal: AbortSignal): Promise<void> {
    const { desc, diffId, chainId } = layer;
    const started = Date.now();
    const timer = new StepTimer(this.logger, 'layer unpack', { layer: desc.digest });
    const tmpDir = this.layout.newSnapshotTmpDir();
    try {
      await fs.mkdir(tmpDir, { mode: 0o700 });
      await fs.mkdir(`${tmpDir}/fs`, { mode: 0o755 });
      signal.throwIfAborted();
      const source = await open();
      timer.mark('request');
      const result = await unpackLayer({
        source,
        expectedSize: desc.size,
        expectedDigest: desc.digest,
        limits: this.limits,
        space: new SpaceReserve(this.layout.root, this.limits.minFreeBytes, this.freeBytes),
        fsDir: `${tmpDir}/fs`,
        lowerDirs: () => this.lowerDirsOf(chainId, diffId),
        signal,
        layerDigest: desc.digest,
        onBlobEnd: () => timer.mark('blob read and verified'),
        writeback: this.writeback,
      });
      timer.mark('unpack after the blob');
      verify(layer, result);
      if (result.droppedXattrs > 0) {
        this.logger.warn({ layer: desc.digest, dropped: result.droppedXattrs }, 'layer carried overlayfs xattrs; they were not applied');
      }
      const meta: SnapshotMeta = { diffId, chainId, size: result.size, inodes: result.inodes, blobDigests: [desc.digest], standsAlone: result.lowerLinks === 0 };
      await this.publish(tmpDir, meta, signal);
      timer.mark('publish');
      timer.done();
      this.logger.info(
        { layer: desc.digest, chainId, bytes: result.blobSize, compression: result.compression, ms: Date.now() - started },
        'layer unpacked',
      );
    } catch (err) {
      timer.done('failed');
      await fs.rm(tmpDir, { recursive: true, force: true }).catch(() => undefined);
      throw describeFailure(layer, err, signal);
    }
  }

  /**
   * Writes meta.json last and renames the complete tree to its chain's name. Published unsynced:
   * the record that will refer to it is written only after durable.flush().
   */
  private async publish(tmpDir: string, meta: SnapshotMeta, signal: AbortSignal): Promise<void> {
    await fs.writeFile(`${tmpDir}/meta.json`, JSON.stringify(meta), { mode: 0o600 });
    signal.throwIfAborted();
    await this.guard.mutex.run(async () => {
      await fs.rename(tmpDir, this.layout.snapshotDir(meta.chainId));
      this.guard.mark(snapshotKey(sha256Hex(meta.chainId, 'chain ID')));
      this.durable.notePublished();
    });
  }

  /**
   * The fs/ dirs of the layers under `chainId`, top first, found by recomputing chain IDs (the
   * parent P of a layer satisfies chain = sha256(P + " " + diffId)). Only needed for hard links
   * into lower layers.
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
      dirs.push(this.layout.snapshotFsDir(parent));
      const meta = JSON.parse(await fs.readFile(this.layout.snapshotMetaPath(parent), 'utf8')) as SnapshotMeta;
      chain = parent;
      diff = meta.diffId;
    }
    return dirs;
  }

  private async findParentChain(chain: string, diff: string): Promise<string | undefined> {
    for (const candidate of this.snapshots.keys()) {
      if (candidate !== chain && childChainId(candidate, diff) === chain) {
        await this.snapshots.pending(candidate);
        return (await pathExists(this.layout.snapshotMetaPath(candidate))) ? candidate : undefined;
      }
    }
    for (const name of await fs.readdir(this.layout.snapshotsDir)) {
      if (!HEX_NAME.test(name)) continue;
      const candidate = `sha256:${name}`;
      if (childChainId(candidate, diff) === chain) return candidate;
    }
    return undefined;
  }
}

function verify(layer: LayerToIngest, result: UnpackLayerResult): void {
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

function describeFailure(layer: LayerToIngest, err: unknown, signal: AbortSignal): StoreError {
  const digest = layer.desc.digest;
  if (isStoreError(err)) {
    return err.message.includes(digest) ? err : new StoreError(err.kind, `layer ${digest}: ${err.message}`, { cause: err });
  }
  if (signal.aborted) return new StoreError('bad-layer', `ingest of layer ${digest} was aborted`, { cause: err });
  if (err instanceof LimitError) {
    const advice = err.limit === 'minFreeBytes' || err.limit === 'path' ? '' : `; if the image is trusted, raise ${LIMIT_KEYS[err.limit]} in skiff.toml`;
    return new StoreError('limit-exceeded', `layer ${digest} was refused: ${err.message}${advice}`, { cause: err });
  }
  if (err instanceof TarFormatError) {
    return new StoreError(err.reason === 'unsupported' ? 'unsupported' : 'bad-layer', `layer ${digest} cannot be unpacked: ${err.message}`, { cause: err });
  }
  const code = errnoCode(err);
  if (code === 'Z_DATA_ERROR' || code === 'Z_BUF_ERROR' || /zstd/.test(errorMessage(err))) {
    return new StoreError('bad-layer', `layer ${digest} cannot be decompressed: ${errorMessage(err)}`, { cause: err });
  }
  return new StoreError('bad-layer', `layer ${digest} could not be downloaded and unpacked: ${errorMessage(err)}`, { cause: err });
}

async function readSnapshotMeta(path: string): Promise<SnapshotMeta | undefined> {
  try {
    return JSON.parse(await fs.readFile(path, 'utf8')) as SnapshotMeta;
  } catch (err) {
    if (errnoCode(err) === 'ENOENT') return undefined;
    throw err;
  }
}
