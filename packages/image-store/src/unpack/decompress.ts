import { spawn } from 'node:child_process';
import { Duplex, type Readable } from 'node:stream';
import { createGunzip } from 'node:zlib';

export type Compression = 'gzip' | 'zstd' | 'none';

/** By magic bytes, not media type: registries and builders are not always truthful about the latter. */
export function detectCompression(head: Buffer): Compression {
  if (head.length >= 2 && head[0] === 0x1f && head[1] === 0x8b) return 'gzip';
  if (head.length >= 4 && head[0] === 0x28 && head[1] === 0xb5 && head[2] === 0x2f && head[3] === 0xfd) return 'zstd';
  return 'none';
}

/** Reads at least `length` bytes (or everything, if shorter) and returns them with the rest of the stream. */
export async function peek(source: AsyncIterable<Buffer>, length: number): Promise<{ head: Buffer; stream: AsyncIterable<Buffer> }> {
  const iterator = source[Symbol.asyncIterator]();
  const chunks: Buffer[] = [];
  let have = 0;
  let done = false;
  while (have < length) {
    const next = await iterator.next();
    if (next.done) {
      done = true;
      break;
    }
    chunks.push(next.value);
    have += next.value.length;
  }
  async function* replay(): AsyncGenerator<Buffer, void, undefined> {
    try {
      yield* chunks;
      if (done) return;
      for (;;) {
        const next = await iterator.next();
        if (next.done) return;
        yield next.value;
      }
    } finally {
      if (!done) await iterator.return?.();
    }
  }
  return { head: Buffer.concat(chunks), stream: replay() };
}

export interface Decompressor {
  stream: Duplex;
  /** Settles once the decompressor has fully finished; rejects with its error. */
  finished: () => Promise<void>;
}

/** Streaming zstd through the zstd binary (Node 20's zlib has no zstd). */
function zstdDecompressor(): Decompressor {
  const child = spawn('zstd', ['-d', '-c', '-q'], { stdio: ['pipe', 'pipe', 'pipe'] });
  const stderr: Buffer[] = [];
  child.stderr.on('data', (chunk: Buffer) => stderr.push(chunk));
  const stream = Duplex.from({ writable: child.stdin, readable: child.stdout });
  const exited = new Promise<void>((resolve, reject) => {
    child.on('error', (err) => reject(new Error(`cannot run zstd: ${err.message}`)));
    child.on('close', (code, signal) => {
      if (code === 0) return resolve();
      const message = Buffer.concat(stderr).toString('utf8').trim();
      const error = new Error(`zstd decompression failed (${signal ? `signal ${signal}` : `status ${code}`})${message ? `: ${message}` : ''}`);
      stream.destroy(error);
      reject(error);
    });
  });
  exited.catch(() => undefined);
  stream.on('close', () => {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  });
  return { stream, finished: () => exited };
}

export function createDecompressor(compression: Compression): Decompressor | undefined {
  switch (compression) {
    case 'none':
      return undefined;
    case 'gzip': {
      // Larger output chunks than the 16 KiB default: far fewer thread-pool round trips.
      const stream = createGunzip({ chunkSize: 256 * 1024 });
      return { stream, finished: () => Promise.resolve() };
    }
    case 'zstd':
      return zstdDecompressor();
  }
}

export type ByteStream = Readable | NodeJS.ReadableStream | AsyncIterable<Buffer>;
