import { Deflate, Inflate, Z_OK, Z_SYNC_FLUSH } from 'pako';
import { SPDY3_DICTIONARY } from './dictionary.js';

/** Name/value pairs of a header block; names are lowercase, several values of one name are joined by NUL. */
export type HeaderBlock = Map<string, string>;

/** Largest header block inflated; a frame's block past it ends the session. */
export const MAX_HEADER_BLOCK = 64 * 1024;

/** Inflated output is produced (and counted) in pieces of this size. */
const CHUNK = 16 * 1024;

/** Thrown from an output handler to stop zlib at once: a compression bomb costs at most a chunk past the cap. */
class OverLimit extends Error {}

/*
 * SPDY compresses every header block of a connection, in one direction, with one zlib stream
 * primed with the SPDY dictionary, each block ending in a sync flush: the context lives as long as
 * the connection, and frames are decoded in order as they arrive. pako's streaming API does that
 * synchronously (Node's own zlib streams are asynchronous and its *Sync calls are one-shot).
 */

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
  private readonly deflate = new Deflate({ dictionary: SPDY3_DICTIONARY, chunkSize: CHUNK });
  private out: Uint8Array[] = [];

  constructor() {
    this.deflate.onData = (chunk) => this.out.push(chunk);
  }

  compress(headers: HeaderBlock): Buffer {
    this.out = [];
    if (!this.deflate.push(encodeHeaderBlock(headers), Z_SYNC_FLUSH) || this.deflate.err !== Z_OK) {
      throw new HeaderCompressionError(`header block does not deflate: ${this.deflate.msg || this.deflate.err}`);
    }
    return Buffer.concat(this.out);
  }

  close(): void {
    this.out = [];
  }
}

export class HeaderDecompressor {
  private readonly inflate = new Inflate({ dictionary: SPDY3_DICTIONARY, chunkSize: CHUNK });
  private out: Uint8Array[] = [];
  private outBytes = 0;
  private failed: string | undefined;

  constructor(private readonly limit = MAX_HEADER_BLOCK) {
    this.inflate.onData = (chunk) => {
      this.outBytes += chunk.length;
      if (this.outBytes > this.limit) throw new OverLimit(`a header block inflates to more than ${this.limit} bytes`);
      this.out.push(chunk);
    };
  }

  decompress(compressed: Buffer): HeaderBlock {
    if (compressed.length === 0) return new Map();
    // One failure leaves the stream unusable; the session ends with it anyway.
    if (this.failed) throw new HeaderCompressionError(this.failed);
    this.out = [];
    this.outBytes = 0;
    try {
      if (!this.inflate.push(compressed, Z_SYNC_FLUSH) || this.inflate.err !== Z_OK) {
        throw new Error(this.inflate.msg || `zlib error ${this.inflate.err}`);
      }
    } catch (err) {
      this.failed = err instanceof OverLimit ? err.message : `header block does not inflate: ${(err as Error).message}`;
      this.out = [];
      throw new HeaderCompressionError(this.failed);
    }
    return decodeHeaderBlock(Buffer.concat(this.out));
  }

  close(): void {
    this.out = [];
  }
}
