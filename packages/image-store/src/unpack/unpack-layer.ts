import { createHash, type Hash } from 'node:crypto';
import { promises as fs } from 'node:fs';
import type { FileHandle } from 'node:fs/promises';
import { PassThrough, Readable, Transform, type TransformCallback } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { StoreError } from '../errors.js';
import { readTar } from '../tar/tar-reader.js';
import { createDecompressor, detectCompression, type Compression } from './decompress.js';
import { LayerExtractor } from './layer-extractor.js';

export type LayerSource = Readable | NodeJS.ReadableStream;

export interface UnpackLayerRequest {
  /** Compressed (or plain) layer bytes. */
  source: LayerSource;
  /** Expected blob size; reading stops with 'size-mismatch' as soon as more arrives. */
  expectedSize: number;
  /** When set, the raw bytes are also written here (created exclusively; not fsynced). */
  blobFile?: string;
  /** Empty directory to unpack into; without one the tar stream is only hashed (for its diff ID). */
  fsDir?: string | undefined;
  lowerDirs: () => Promise<string[]>;
  signal?: AbortSignal;
  /** Used in messages. */
  layerDigest: string;
}

export interface UnpackLayerResult {
  blobDigest: string;
  blobSize: number;
  diffId: string;
  compression: Compression;
  size: number;
  inodes: number;
  droppedXattrs: number;
}

/** How far the download may run ahead of unpacking (per layer; several layers download at once). */
const READ_AHEAD_BYTES = 2 * 1024 * 1024;

/** Hashes and counts the raw bytes and copies them to the blob file while passing them on. */
class BlobTee extends Transform {
  readonly hash: Hash = createHash('sha256');
  size = 0;

  constructor(
    private readonly expectedSize: number,
    private readonly layerDigest: string,
    private readonly file: FileHandle | undefined,
  ) {
    super({ highWaterMark: READ_AHEAD_BYTES });
  }

  override _transform(chunk: Buffer, _encoding: BufferEncoding, callback: TransformCallback): void {
    this.size += chunk.length;
    if (this.size > this.expectedSize) {
      callback(new StoreError('size-mismatch', `layer ${this.layerDigest} failed verification: expected ${this.expectedSize} bytes, got more`));
      return;
    }
    this.hash.update(chunk);
    this.push(chunk);
    if (!this.file) {
      callback();
      return;
    }
    writeAll(this.file, chunk).then(() => callback(), callback);
  }
}

async function writeAll(file: FileHandle, chunk: Buffer): Promise<void> {
  let offset = 0;
  while (offset < chunk.length) {
    const { bytesWritten } = await file.write(chunk, offset, chunk.length - offset);
    offset += bytesWritten;
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
 * One pass over the layer bytes: they are hashed, counted and (optionally) saved as the blob
 * while being decompressed and unpacked, with the uncompressed tar hashed for the diff ID.
 * Verification against expected digests is the caller's job; this only measures.
 */
export async function unpackLayer(request: UnpackLayerRequest): Promise<UnpackLayerResult> {
  const { signal } = request;
  const readable = toReadable(request.source);
  // Until the pipeline below attaches its own listeners, an early stream error must not go
  // unhandled (that would end the process); the pipeline still reports it.
  readable.on('error', () => undefined);
  let file: FileHandle | undefined;
  let head: Buffer;
  try {
    if (request.blobFile) file = await fs.open(request.blobFile, 'wx', 0o644);
    head = await peekHead(readable, 4, signal);
  } catch (err) {
    readable.destroy();
    await file?.close();
    throw err;
  }
  try {
    const compression = detectCompression(head);
    const decompressor = createDecompressor(compression);
    const tee = new BlobTee(request.expectedSize, request.layerDigest, file);
    const output = decompressor?.stream ?? new PassThrough();
    const piped = pipeline(readable, tee, output, signal ? { signal } : {});
    piped.catch(() => undefined);

    const diffHash = createHash('sha256');
    const extractor = request.fsDir === undefined ? undefined : new LayerExtractor(request.fsDir, { lowerDirs: request.lowerDirs });
    try {
      if (extractor) {
        await readTar(output, (entry, content) => extractor.apply(entry, content), { onChunk: (chunk) => diffHash.update(chunk) });
      } else {
        for await (const chunk of output) diffHash.update(chunk as Buffer);
      }
      await piped;
      await decompressor?.finished();
    } catch (err) {
      output.destroy();
      readable.destroy();
      await piped.catch(() => undefined);
      // Streams torn down by an abort fail with assorted errors; report the abort itself.
      if (signal?.aborted) throw signal.reason;
      throw err;
    }
    const stats = extractor ? await extractor.finish() : { size: 0, inodes: 0 };
    return {
      blobDigest: `sha256:${tee.hash.digest('hex')}`,
      blobSize: tee.size,
      diffId: `sha256:${diffHash.digest('hex')}`,
      compression,
      size: stats.size,
      inodes: stats.inodes,
      droppedXattrs: extractor?.droppedXattrs ?? 0,
    };
  } finally {
    await file?.close();
  }
}
