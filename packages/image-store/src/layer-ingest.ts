import { createReadStream, promises as fs } from 'node:fs';
import type { Readable } from 'node:stream';
import { StepTimer, type Logger, errnoCode, errorMessage, pathExists } from '@skiff/common';
import { childChainId } from './chain-id.js';
import { blobKey, snapshotKey, type ContentGuard } from './content-guard.js';
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

/** 'snapshot': the chain's unpacked tree (and the blob, if it has to be downloaded for it). 'blob': only this blob. */
type Want = 'snapshot' | 'blob';

const BLOB_READ_CHUNK = 1024 * 1024;

export function assertSize(size: unknown, what: string): asserts size is number {
  if (typeof size !== 'number' || !Number.isSafeInteger(size) || size < 0) {
    throw new TypeError(`${what} size ${JSON.stringify(size)} is not a non-negative integer`);
  }
}

/**
 * Brings layers into the store: downloads, verifies and unpacks in one pass, commits only
 * verified content, and leaves nothing behind on failure.
 */
export class LayerIngest {
  /** Unpacks, one per chain ID at a time. */
  private readonly snapshots = new SharedOperations();
  /** Blob-only downloads, one per digest at a time. */
  private readonly blobs = new SharedOperations();
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
      await this.snapshots.run(chainId, callerSignal, (signal) => this.ingestOnce(layer, open, signal, 'snapshot'));
      // The snapshot may have come from another blob with the same diff ID (a gzip and a zstd
      // build of one layer, say); the record will name this blob, so it must be here too.
      await this.blobs.run(desc.digest, callerSignal, (signal) => this.ingestOnce(layer, open, signal, 'blob'));
    } catch (err) {
      if (callerSignal?.aborted && !isStoreError(err)) {
        throw new StoreError('bad-layer', `ingest of layer ${desc.digest} was aborted`, { cause: err });
      }
      throw err;
    }
  }

  async abortAll(reason: unknown): Promise<void> {
    await Promise.all([this.snapshots.abortAll(reason), this.blobs.abortAll(reason)]);
    await this.writeback.idle();
  }

  private async isPresent(layer: LayerToIngest, want: Want): Promise<boolean> {
    const path = want === 'snapshot' ? this.layout.snapshotMetaPath(layer.chainId) : this.layout.blobPath(layer.desc.digest);
    const key = want === 'snapshot' ? snapshotKey(sha256Hex(layer.chainId, 'chain ID')) : blobKey(sha256Hex(layer.desc.digest, 'digest'));
    return this.guard.mutex.run(async () => {
      if (!(await pathExists(path))) return false;
      this.guard.mark(key);
      return true;
    });
  }

  private async ingestOnce(layer: LayerToIngest, open: LayerStreamOpener, signal: AbortSignal, want: Want): Promise<void> {
    if (await this.isPresent(layer, want)) return;
    await this.guard.whileWriting(() => this.fetchAndCommit(layer, open, signal, want));
  }

  private async fetchAndCommit(layer: LayerToIngest, open: LayerStreamOpener, signal: AbortSignal, want: Want): Promise<void> {
    const { desc, diffId, chainId } = layer;
    const blobPath = this.layout.blobPath(desc.digest);
    const started = Date.now();
    const timer = new StepTimer(this.logger, want === 'snapshot' ? 'layer unpack' : 'layer blob', { layer: desc.digest });
    const tmpDir = want === 'snapshot' ? this.layout.newSnapshotTmpDir() : undefined;
    let ingestFile: string | undefined;
    try {
      if (tmpDir) {
        await fs.mkdir(tmpDir, { mode: 0o700 });
        await fs.mkdir(`${tmpDir}/fs`, { mode: 0o755 });
      }
      const haveBlob = await pathExists(blobPath);
      if (!haveBlob) ingestFile = this.layout.newIngestFile(desc.digest);
      signal.throwIfAborted();
      const source = haveBlob ? createReadStream(blobPath, { highWaterMark: BLOB_READ_CHUNK }) : await open();
      timer.mark(haveBlob ? 'open stored blob' : 'request');
      const result = await unpackLayer({
        source,
        expectedSize: desc.size,
        expectedDigest: desc.digest,
        limits: this.limits,
        space: new SpaceReserve(this.layout.root, this.limits.minFreeBytes, this.freeBytes),
        blobFile: ingestFile,
        fsDir: tmpDir && `${tmpDir}/fs`,
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
      if (tmpDir) {
        const meta: SnapshotMeta = { diffId, chainId, size: result.size, inodes: result.inodes };
        await fs.writeFile(`${tmpDir}/meta.json`, JSON.stringify(meta), { mode: 0o600 });
      }
      signal.throwIfAborted();
      // Published unsynced: the record that will refer to it is written only after durable.flush().
      await this.guard.mutex.run(async () => {
        if (ingestFile) {
          await fs.rename(ingestFile, blobPath);
          ingestFile = undefined;
          this.guard.mark(blobKey(sha256Hex(desc.digest, 'digest')));
        }
        if (tmpDir) {
          await fs.rename(tmpDir, this.layout.snapshotDir(chainId));
          this.guard.mark(snapshotKey(sha256Hex(chainId, 'chain ID')));
        }
        this.durable.notePublished();
      });
      timer.mark('publish');
      timer.done();
      this.logger.info(
        { layer: desc.digest, chainId, bytes: result.blobSize, compression: result.compression, downloaded: !haveBlob, unpacked: want === 'snapshot', ms: Date.now() - started },
        want === 'snapshot' ? 'layer unpacked' : 'layer blob stored',
      );
    } catch (err) {
      timer.done('failed');
      if (tmpDir) await fs.rm(tmpDir, { recursive: true, force: true }).catch(() => undefined);
      if (ingestFile) await fs.rm(ingestFile, { force: true }).catch(() => undefined);
      throw describeFailure(layer, err, signal);
    }
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
