/**
 * Deterministic, incompressible pseudo-random data (AES-128-CTR keystream).
 *
 *   pseudoRandomChunks(seed, size, chunkSize?): Generator<Buffer>
 *   pseudoRandomStream(seed, size): Readable
 *   pseudoRandomBytes(seed, size): Buffer            for small sizes only
 *
 * The same seed always yields the same bytes, so layer digests are stable
 * across runs while the data stays incompressible.
 */
import { createCipheriv, createHash } from 'node:crypto';
import { Readable } from 'node:stream';

const DEFAULT_CHUNK = 1024 * 1024;

export function* pseudoRandomChunks(seed: string, size: number, chunkSize = DEFAULT_CHUNK): Generator<Buffer> {
  const key = createHash('sha256').update(seed).digest().subarray(0, 16);
  const cipher = createCipheriv('aes-128-ctr', key, Buffer.alloc(16));
  const zeros = Buffer.alloc(chunkSize);
  let remaining = size;
  while (remaining > 0) {
    const n = Math.min(chunkSize, remaining);
    yield cipher.update(n === chunkSize ? zeros : zeros.subarray(0, n));
    remaining -= n;
  }
}

export function pseudoRandomStream(seed: string, size: number): Readable {
  return Readable.from(pseudoRandomChunks(seed, size), { objectMode: false });
}

export function pseudoRandomBytes(seed: string, size: number): Buffer {
  return Buffer.concat([...pseudoRandomChunks(seed, size)]);
}
