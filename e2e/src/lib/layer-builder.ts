/**
 * Builds image layer blobs from tar entries, streaming to disk.
 *
 *   interface Layer { digest, size, diffId, uncompressedSize, compression, path }
 *   buildLayer(entries, { blobDir, compression?, gzipLevel? }): Promise<Layer>
 *
 * tar -> sha256 (diffID) -> gzip | zstd | nothing -> sha256 (blob digest) -> temp file
 * -> renamed into the blob directory. Nothing is held in memory beyond stream
 * buffers, so 100 MB layers are cheap. zstd compression runs the `zstd` binary.
 */
import { spawn } from 'node:child_process';
import { createWriteStream } from 'node:fs';
import { mkdir, rm } from 'node:fs/promises';
import type { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { createGzip } from 'node:zlib';
import { adoptBlobFile, newTempPath } from './blob-dir.js';
import type { LayerCompression } from './media-types.js';
import { DigestCounter } from './sha256.js';
import { tarStream, type TarEntry } from './tar-writer.js';

export interface Layer {
  /** Digest of the (possibly compressed) blob. */
  digest: string;
  size: number;
  /** Digest of the uncompressed tar. */
  diffId: string;
  uncompressedSize: number;
  compression: LayerCompression;
  path: string;
}

export interface BuildLayerOptions {
  blobDir: string;
  compression?: LayerCompression;
  /** zlib level for gzip layers (default 6). */
  gzipLevel?: number;
  /** zstd level (default 3). */
  zstdLevel?: number;
}

async function compressWithZstd(
  tar: Readable,
  tarCounter: DigestCounter,
  blobCounter: DigestCounter,
  level: number,
  outPath: string,
): Promise<void> {
  const child = spawn('zstd', ['-q', '-c', `-${level}`, '-T1'], { stdio: ['pipe', 'pipe', 'pipe'] });
  let stderr = '';
  child.stderr.setEncoding('utf8').on('data', (text: string) => (stderr += text));
  const exited = new Promise<void>((resolve, reject) => {
    child.once('error', reject);
    child.once('close', (code) => (code === 0 ? resolve() : reject(new Error(`zstd exited with ${code}: ${stderr}`))));
  });
  await Promise.all([
    pipeline(tar, tarCounter, child.stdin),
    pipeline(child.stdout, blobCounter, createWriteStream(outPath)),
    exited,
  ]);
}

export async function buildLayer(
  entries: Iterable<TarEntry> | AsyncIterable<TarEntry>,
  options: BuildLayerOptions,
): Promise<Layer> {
  const compression = options.compression ?? 'gzip';
  await mkdir(options.blobDir, { recursive: true });
  const temp = newTempPath(options.blobDir);
  const tarCounter = new DigestCounter();
  const blobCounter = new DigestCounter();
  try {
    if (compression === 'gzip') {
      await pipeline(
        tarStream(entries),
        tarCounter,
        createGzip({ level: options.gzipLevel ?? 6 }),
        blobCounter,
        createWriteStream(temp),
      );
    } else if (compression === 'zstd') {
      await compressWithZstd(tarStream(entries), tarCounter, blobCounter, options.zstdLevel ?? 3, temp);
    } else {
      await pipeline(tarStream(entries), tarCounter, blobCounter, createWriteStream(temp));
    }
    const blob = blobCounter.result();
    const tar = tarCounter.result();
    const path = await adoptBlobFile(options.blobDir, temp, blob.digest);
    return {
      digest: blob.digest,
      size: blob.size,
      diffId: tar.digest,
      uncompressedSize: tar.size,
      compression,
      path,
    };
  } catch (error) {
    await rm(temp, { force: true });
    throw error;
  }
}
