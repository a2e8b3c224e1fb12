import { spawn } from 'node:child_process';
import { Duplex } from 'node:stream';
import { createGunzip } from 'node:zlib';

export type Compression = 'gzip' | 'zstd' | 'none';

/** By magic bytes, not media type: registries and builders are not always truthful about the latter. */
export function detectCompression(head: Buffer): Compression {
  if (head.length >= 2 && head[0] === 0x1f && head[1] === 0x8b) return 'gzip';
  if (head.length >= 4 && head[0] === 0x28 && head[1] === 0xb5 && head[2] === 0x2f && head[3] === 0xfd) return 'zstd';
  return 'none';
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
  let outputEnded = false;
  child.stdout.once('end', () => (outputEnded = true));
  // Torn down before zstd finished (an error elsewhere, or an abort): don't leave it running.
  stream.on('close', () => {
    if (!outputEnded && child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  });
  return { stream, finished: () => exited };
}

export function createDecompressor(compression: Compression): Decompressor | undefined {
  switch (compression) {
    case 'none':
      return undefined;
    case 'gzip': {
      // Larger output chunks than the 16 KiB default: far fewer thread-pool round trips (the input
      // comes in pieces of up to 1 MiB, see unpack-layer.ts).
      const stream = createGunzip({ chunkSize: 1024 * 1024 });
      return { stream, finished: () => Promise.resolve() };
    }
    case 'zstd':
      return zstdDecompressor();
  }
}
