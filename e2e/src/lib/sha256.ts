/**
 * SHA-256 helpers for content-addressed blobs.
 *
 *   sha256Hex(data): string                       hex digest of a buffer/string
 *   sha256Digest(data): string                    "sha256:<hex>"
 *   digestFile(path): Promise<{digest, size}>      streams the file
 *   digestHex(digest): string                     "<hex>" from "sha256:<hex>" (validates)
 *   class DigestCounter extends Transform         pass-through that hashes and counts bytes
 */
import { createHash, type Hash } from 'node:crypto';
import { createReadStream } from 'node:fs';
import { Transform, type TransformCallback } from 'node:stream';

export function sha256Hex(data: Buffer | string): string {
  return createHash('sha256').update(data).digest('hex');
}

export function sha256Digest(data: Buffer | string): string {
  return `sha256:${sha256Hex(data)}`;
}

export function digestHex(digest: string): string {
  const match = /^sha256:([a-f0-9]{64})$/.exec(digest);
  if (!match) throw new Error(`not a sha256 digest: ${digest}`);
  return match[1]!;
}

export async function digestFile(path: string): Promise<{ digest: string; size: number }> {
  const hash = createHash('sha256');
  let size = 0;
  for await (const chunk of createReadStream(path)) {
    const buf = chunk as Buffer;
    hash.update(buf);
    size += buf.length;
  }
  return { digest: `sha256:${hash.digest('hex')}`, size };
}

/** A pass-through stream that hashes and counts everything flowing through it. */
export class DigestCounter extends Transform {
  private readonly hash: Hash = createHash('sha256');
  private count = 0;

  override _transform(chunk: Buffer, _encoding: BufferEncoding, callback: TransformCallback): void {
    this.hash.update(chunk);
    this.count += chunk.length;
    callback(null, chunk);
  }

  /** Valid once the stream has finished. */
  result(): { digest: string; size: number } {
    return { digest: `sha256:${this.hash.copy().digest('hex')}`, size: this.count };
  }
}
