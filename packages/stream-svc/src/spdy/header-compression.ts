import zlib from 'node:zlib';
import { SPDY3_DICTIONARY } from './dictionary.js';

/** Name/value pairs of a header block; names are lowercase, several values of one name are joined by NUL. */
export type HeaderBlock = Map<string, string>;

/**
 * zlib's streams offer no public synchronous call on a long-lived context (the *Sync functions are
 * one-shot and close their context). SPDY needs one context per direction for the whole
 * connection, and frames are decoded in order as they arrive, so we drive the stream's native
 * handle synchronously, as those functions do, without closing it.
 */
interface NativeZlibHandle {
  writeSync(flush: number, input: Buffer, inOff: number, inLen: number, out: Buffer, outOff: number, outLen: number): void;
}
interface ZlibInternals {
  _handle: NativeZlibHandle | null;
  _writeState: Uint32Array;
  destroyed: boolean;
  close(): void;
}

/** Failures surface as HeaderCompressionError from processSync; the stream's own error event is muted. */
function quiet<T extends zlib.Inflate | zlib.Deflate>(stream: T): ZlibInternals {
  stream.on('error', () => undefined);
  return stream as unknown as ZlibInternals;
}

const OUT_CHUNK = 16 * 1024;

function processSync(stream: ZlibInternals, input: Buffer): Buffer {
  const out: Buffer[] = [];
  let inOff = 0;
  let inLen = input.length;
  for (;;) {
    const handle = stream._handle;
    if (!handle || stream.destroyed) throw new HeaderCompressionError('zlib context is closed or failed');
    const buffer = Buffer.allocUnsafe(OUT_CHUNK);
    handle.writeSync(zlib.constants.Z_SYNC_FLUSH, input, inOff, inLen, buffer, 0, OUT_CHUNK);
    if (!stream._handle || stream.destroyed) throw new HeaderCompressionError('malformed compressed header block');
    const availOut = stream._writeState[0]!;
    const availIn = stream._writeState[1]!;
    if (OUT_CHUNK - availOut > 0) out.push(buffer.subarray(0, OUT_CHUNK - availOut));
    inOff += inLen - availIn;
    inLen = availIn;
    if (availOut !== 0) break;
  }
  return Buffer.concat(out);
}

export class HeaderCompressionError extends Error {}

/** Encodes a header block as SPDY/3 does: 32-bit count, then 32-bit length-prefixed names and values. */
export function encodeHeaderBlock(headers: HeaderBlock): Buffer {
  const parts: Buffer[] = [u32(headers.size)];
  for (const [name, value] of headers) {
    const n = Buffer.from(name.toLowerCase(), 'utf8');
    const v = Buffer.from(value, 'utf8');
    parts.push(u32(n.length), n, u32(v.length), v);
  }
  return Buffer.concat(parts);
}

export function decodeHeaderBlock(block: Buffer): HeaderBlock {
  const headers: HeaderBlock = new Map();
  let at = 0;
  const take = (): Buffer => {
    if (at + 4 > block.length) throw new HeaderCompressionError('truncated header block');
    const length = block.readUInt32BE(at);
    at += 4;
    if (at + length > block.length) throw new HeaderCompressionError('truncated header block');
    const bytes = block.subarray(at, at + length);
    at += length;
    return bytes;
  };
  if (block.length < 4) throw new HeaderCompressionError('truncated header block');
  const count = block.readUInt32BE(0);
  at = 4;
  for (let i = 0; i < count; i++) {
    const name = take().toString('utf8');
    const value = take().toString('utf8');
    if (name === '') throw new HeaderCompressionError('empty header name');
    const previous = headers.get(name);
    headers.set(name, previous === undefined ? value : `${previous}\0${value}`);
  }
  return headers;
}

function u32(n: number): Buffer {
  const b = Buffer.alloc(4);
  b.writeUInt32BE(n);
  return b;
}

/**
 * One direction's header compression context. SPDY/3 compresses every header block of a
 * connection with one zlib stream primed with the SPDY dictionary, each block ending in a sync flush.
 */
export class HeaderCompressor {
  private readonly deflate = quiet(zlib.createDeflate({ dictionary: SPDY3_DICTIONARY }));

  compress(headers: HeaderBlock): Buffer {
    return processSync(this.deflate, encodeHeaderBlock(headers));
  }

  close(): void {
    this.deflate.close();
  }
}

export class HeaderDecompressor {
  private readonly inflate = quiet(zlib.createInflate({ dictionary: SPDY3_DICTIONARY }));

  decompress(compressed: Buffer): HeaderBlock {
    if (compressed.length === 0) return new Map();
    let block: Buffer;
    try {
      block = processSync(this.inflate, compressed);
    } catch (err) {
      throw new HeaderCompressionError(`header block does not inflate: ${(err as Error).message}`);
    }
    return decodeHeaderBlock(block);
  }

  close(): void {
    this.inflate.close();
  }
}
