import { createHash, type Hash } from 'node:crypto';
import { PassThrough, Readable, Transform, type TransformCallback } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { StoreError } from '../errors.js';
import { DEFAULT_EXTRACTION_LIMITS, LIMIT_KEYS, LimitError, type ExtractionLimits, type SpaceReserve } from '../limits.js';
import { readTar } from '../tar/tar-reader.js';
import { createDecompressor, detectCompression, type Compression } from './decompress.js';
import { LayerExtractor } from './layer-extractor.js';
import type { EarlyWriteback } from '../writeback.js';

export type LayerSource = Readable | NodeJS.ReadableStream;

export interface UnpackLayerRequest {
  /** Compressed (or plain) layer bytes. */
  source: LayerSource;
  /** Expected blob size; reading stops with 'size-mismatch' as soon as more arrives, or the stream ends short. */
  expectedSize: number;
  /**
   * Expected blob digest, checked the moment the last expected byte arrives: a mismatch stops the
   * unpack there, however much decompressed data is still to come.
   */
  expectedDigest?: string;
  /** Default DEFAULT_EXTRACTION_LIMITS; minFreeBytes is `space`'s business. */
  limits?: ExtractionLimits;
  /** Checked before anything is written and while the tree grows. */
  space?: SpaceReserve;
  /** Empty directory to unpack into. The raw bytes are hashed and counted, never stored. */
  fsDir: string;
  lowerDirs: () => Promise<string[]>;
  signal?: AbortSignal;
  /** Used in messages. */
  layerDigest: string;
  /** Called once every blob byte has arrived and been verified (the unpack may still be running). */
  onBlobEnd?: () => void;
  /** When set, large unpacked files are handed to it once complete, to be written out early. */
  writeback?: EarlyWriteback;
}

export interface UnpackLayerResult {
  blobDigest: string;
  blobSize: number;
  diffId: string;
  compression: Compression;
  size: number;
  inodes: number;
  droppedXattrs: number;
  /** Hard links into lower layers, resolved by copying the lower files in. */
  lowerLinks: number;
}

/** How far the download may run ahead of unpacking (per layer; several layers download at once). */
const READ_AHEAD_BYTES = 2 * 1024 * 1024;

/**
 * Raw bytes are passed on in pieces of up to this size: a download arrives in chunks of 16-64 KiB,
 * and each chunk handed to the decompressor on its own is a round trip to the thread pool that
 * costs more than copying it into a larger piece.
 */
const BATCH_BYTES = 1024 * 1024;

/**
 * Hashes, counts and verifies the raw bytes while passing them on.
 * Chunks are gathered into pieces of up to BATCH_BYTES; a piece goes on when it is full, when the
 * last byte of the blob has arrived, or when the source has nothing more for now (so a slow download
 * is still unpacked as it arrives). It reads ahead of the unpack, so it sees the end of the blob
 * before the unpack does.
 */
class BlobTee extends Transform {
  private readonly hash: Hash = createHash('sha256');
  private digest: string | undefined;
  /** The piece being gathered, and how much of it is filled. */
  private batch: Buffer | undefined;
  private batchLength = 0;
  /** Sends a part-filled piece on once the source has paused. */
  private idleFlush: NodeJS.Immediate | undefined;
  size = 0;
  /** The first verification failure: it explains whatever else fails after it. */
  failure: StoreError | undefined;

  constructor(
    private readonly expectedSize: number,
    private readonly expectedDigest: string | undefined,
    private readonly layerDigest: string,
    private readonly onEnd: (() => void) | undefined,
  ) {
    super({ highWaterMark: READ_AHEAD_BYTES });
  }

  /** Digest of the bytes seen; call once they are all in. */
  blobDigest(): string {
    this.digest ??= `sha256:${this.hash.digest('hex')}`;
    return this.digest;
  }

  private fail(callback: TransformCallback, kind: 'size-mismatch' | 'digest-mismatch', detail: string): void {
    this.failure = new StoreError(kind, `layer ${this.layerDigest} failed verification: ${detail}`);
    callback(this.failure);
  }

  override _transform(chunk: Buffer, _encoding: BufferEncoding, callback: TransformCallback): void {
    this.cancelIdleFlush();
    this.size += chunk.length;
    if (this.size > this.expectedSize) return this.fail(callback, 'size-mismatch', `expected ${this.expectedSize} bytes, got more`);
    this.hash.update(chunk);
    if (this.size === this.expectedSize && this.expectedDigest !== undefined && this.blobDigest() !== this.expectedDigest) {
      return this.fail(callback, 'digest-mismatch', `expected digest ${this.expectedDigest}, got ${this.blobDigest()}`);
    }
    for (const piece of this.gather(chunk, this.size === this.expectedSize)) this.push(piece);
    if (this.batchLength > 0) this.idleFlush = setImmediate(() => this.flushIdle());
    callback();
  }

  /** The pieces ready to go on once `chunk` is added; `last`: the blob is complete, send everything. */
  private gather(chunk: Buffer, last: boolean): Buffer[] {
    if (this.batchLength === 0 && (chunk.length >= BATCH_BYTES || last)) return [chunk];
    const ready: Buffer[] = [];
    let rest = chunk;
    while (rest.length > 0) {
      this.batch ??= Buffer.allocUnsafe(BATCH_BYTES);
      const take = Math.min(rest.length, BATCH_BYTES - this.batchLength);
      rest.copy(this.batch, this.batchLength, 0, take);
      this.batchLength += take;
      rest = rest.subarray(take);
      if (this.batchLength === BATCH_BYTES) ready.push(this.takeBatch()!);
    }
    if (last && this.batchLength > 0) ready.push(this.takeBatch()!);
    return ready;
  }

  private takeBatch(): Buffer | undefined {
    if (!this.batch || this.batchLength === 0) return undefined;
    const piece = this.batch.subarray(0, this.batchLength);
    this.batch = undefined;
    this.batchLength = 0;
    return piece;
  }

  private flushIdle(): void {
    this.idleFlush = undefined;
    if (this.destroyed) return;
    const piece = this.takeBatch();
    if (piece) this.push(piece);
  }

  private cancelIdleFlush(): void {
    if (this.idleFlush) clearImmediate(this.idleFlush);
    this.idleFlush = undefined;
  }

  override _flush(callback: TransformCallback): void {
    this.cancelIdleFlush();
    if (this.size < this.expectedSize) return this.fail(callback, 'size-mismatch', `expected ${this.expectedSize} bytes, got ${this.size}`);
    // Only an empty blob leaves nothing sent here (any other sends its last piece with its last byte).
    const piece = this.takeBatch();
    if (piece) this.push(piece);
    this.onEnd?.();
    callback();
  }

  override _destroy(error: Error | null, callback: (error: Error | null) => void): void {
    this.cancelIdleFlush();
    callback(error);
  }
}

/** Counts the uncompressed bytes against image.max_layer_bytes and the free-space reserve. */
class TarBudget {
  private bytes = 0;

  constructor(
    private readonly maxBytes: number,
    private readonly space: SpaceReserve | undefined,
  ) {}

  spend(chunk: Buffer): Promise<void> | undefined {
    this.bytes += chunk.length;
    if (this.bytes > this.maxBytes) {
      throw new LimitError('maxLayerBytes', `layer unpacks to more than ${this.maxBytes} bytes (${LIMIT_KEYS.maxLayerBytes})`);
    }
    return this.space?.spend(chunk.length);
  }
}

function toReadable(source: LayerSource): Readable {
  if (source instanceof Readable) return source;
  const maybeIterable = source as Partial<AsyncIterable<Buffer>>;
  if (typeof maybeIterable[Symbol.asyncIterator] === 'function') return Readable.from(source as AsyncIterable<Buffer>, { objectMode: false });
  return new Readable().wrap(source);
}

/** Reads the first `length` bytes (fewer at end of stream) and puts them back. */
async function peekHead(readable: Readable, length: number, signal: AbortSignal | undefined): Promise<Buffer> {
  const chunks: Buffer[] = [];
  let have = 0;
  while (have < length) {
    signal?.throwIfAborted();
    const chunk = readable.read() as Buffer | string | null;
    if (chunk !== null) {
      const buffer = typeof chunk === 'string' ? Buffer.from(chunk) : chunk;
      chunks.push(buffer);
      have += buffer.length;
      continue;
    }
    if (readable.readableEnded || readable.destroyed) break;
    await new Promise<void>((resolve, reject) => {
      const done = (err?: unknown): void => {
        readable.off('readable', onReadable);
        readable.off('end', onEnd);
        readable.off('error', onError);
        readable.off('close', onClose);
        signal?.removeEventListener('abort', onAbort);
        if (err) reject(err);
        else resolve();
      };
      const onReadable = (): void => done();
      const onEnd = (): void => done();
      const onClose = (): void => done();
      const onError = (err: Error): void => done(err);
      const onAbort = (): void => done(signal?.reason);
      readable.once('readable', onReadable);
      readable.once('end', onEnd);
      readable.once('error', onError);
      readable.once('close', onClose);
      signal?.addEventListener('abort', onAbort, { once: true });
    });
    if (readable.errored) throw readable.errored;
  }
  const head = Buffer.concat(chunks);
  if (head.length > 0) readable.unshift(head);
  return head;
}

/**
 * One pass over the layer bytes: they are hashed and counted while being decompressed and
 * unpacked, with the uncompressed tar hashed for the diff ID. Verification against expected
 * digests is the caller's job; this only measures.
 */
export async function unpackLayer(request: UnpackLayerRequest): Promise<UnpackLayerResult> {
  const { signal } = request;
  const readable = toReadable(request.source);
  // Until the pipeline below attaches its own listeners, an early stream error must not go
  // unhandled (that would end the process); the pipeline still reports it.
  readable.on('error', () => undefined);
  const limits = request.limits ?? DEFAULT_EXTRACTION_LIMITS;
  let compression: Compression;
  let decompressor: ReturnType<typeof createDecompressor>;
  try {
    await request.space?.check(0);
    compression = detectCompression(await peekHead(readable, 4, signal));
    decompressor = createDecompressor(compression);
  } catch (err) {
    readable.destroy();
    throw err;
  }
  const tee = new BlobTee(request.expectedSize, request.expectedDigest, request.layerDigest, request.onBlobEnd);
  const output = decompressor?.stream ?? new PassThrough();
  const piped = pipeline(readable, tee, output, signal ? { signal } : {});
  piped.catch(() => undefined);

  const diffHash = createHash('sha256');
  const extractor = new LayerExtractor(request.fsDir, { lowerDirs: request.lowerDirs, writeback: request.writeback });
  const budget = new TarBudget(limits.maxLayerBytes, request.space);
  try {
    await readTar(output, (entry, content) => extractor.apply(entry, content), {
      onChunk: (chunk) => {
        diffHash.update(chunk);
        return budget.spend(chunk);
      },
      maxEntries: limits.maxLayerEntries,
      maxPaxHeaderBytes: limits.maxPaxHeaderBytes,
    });
    await piped;
    await decompressor?.finished();
  } catch (err) {
    output.destroy();
    readable.destroy();
    await piped.catch(() => undefined);
    // Streams torn down by an abort or a failed verification fail with assorted errors; report the cause.
    if (signal?.aborted) throw signal.reason;
    throw tee.failure ?? err;
  }
  const stats = await extractor.finish();
  return {
    blobDigest: tee.blobDigest(),
    blobSize: tee.size,
    diffId: `sha256:${diffHash.digest('hex')}`,
    compression,
    size: stats.size,
    inodes: stats.inodes,
    droppedXattrs: extractor.droppedXattrs,
    lowerLinks: extractor.lowerLinks,
  };
}
