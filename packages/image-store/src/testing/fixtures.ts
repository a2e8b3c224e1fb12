import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { gzipSync } from 'node:zlib';
import { createLogger, type Logger } from '@skiff/common';
import { chainIds } from '../chain-id.js';
import type { Descriptor, ImageRecord, LayerRecord } from '../types.js';
import type { ImageStore } from '../image-store.js';
import { buildTar } from './tar-builder.js';

export const GZIP_LAYER = 'application/vnd.oci.image.layer.v1.tar+gzip';
export const ZSTD_LAYER = 'application/vnd.oci.image.layer.v1.tar+zstd';
export const TAR_LAYER = 'application/vnd.oci.image.layer.v1.tar';

export function quietLogger(): Logger {
  return createLogger('image-store-test', 'fatal');
}

const createdTempDirs: string[] = [];
process.on('exit', () => {
  for (const dir of createdTempDirs) rmSync(dir, { recursive: true, force: true });
});

/** A fresh directory, removed when the test process exits. */
export function tempDir(prefix: string): string {
  const dir = mkdtempSync(join(tmpdir(), `skiff-${prefix}-`));
  createdTempDirs.push(dir);
  return dir;
}

export function sha256(data: Buffer | string): string {
  return `sha256:${createHash('sha256').update(data).digest('hex')}`;
}

/** GNU tar of a directory's contents, as an image builder would produce it. */
export function tarDirectory(dir: string, format: 'pax' | 'gnu' = 'pax'): Buffer {
  return execFileSync('tar', [`--format=${format}`, '--xattrs', '--xattrs-include=*', '--numeric-owner', '-C', dir, '-c', '.'], {
    maxBuffer: 512 * 1024 * 1024,
  });
}

export function zstdCompress(data: Buffer): Buffer {
  return execFileSync('zstd', ['-q', '-c', '-3'], { input: data, maxBuffer: 512 * 1024 * 1024 });
}

export interface LayerFixture {
  tar: Buffer;
  blob: Buffer;
  desc: Descriptor;
  diffId: string;
}

export function layerFixture(tar: Buffer, compression: 'gzip' | 'zstd' | 'none' = 'gzip'): LayerFixture {
  const blob = compression === 'gzip' ? gzipSync(tar) : compression === 'zstd' ? zstdCompress(tar) : tar;
  const mediaType = compression === 'gzip' ? GZIP_LAYER : compression === 'zstd' ? ZSTD_LAYER : TAR_LAYER;
  return { tar, blob, desc: { mediaType, digest: sha256(blob), size: blob.length }, diffId: sha256(tar) };
}

/** An opener that serves `data` in small chunks and counts how often it was called. */
export function opener(data: Buffer, chunkSize = 64 * 1024): { open: () => Promise<Readable>; calls: () => number } {
  let calls = 0;
  return {
    open: async () => {
      calls++;
      const chunks: Buffer[] = [];
      for (let i = 0; i < data.length; i += chunkSize) chunks.push(data.subarray(i, i + chunkSize));
      return Readable.from(chunks, { objectMode: false });
    },
    calls: () => calls,
  };
}

/** Ingests the layers (bottom first), stores a config, and records the image. */
export async function addTestImage(
  store: ImageStore,
  layers: LayerFixture[],
  options: { tags?: string[]; repoDigests?: string[]; user?: string; label?: string } = {},
): Promise<ImageRecord> {
  const chains = chainIds(layers.map((l) => l.diffId));
  const records: LayerRecord[] = [];
  for (const [i, layer] of layers.entries()) {
    await store.ingestLayer({ desc: layer.desc, diffId: layer.diffId, chainId: chains[i]! }, opener(layer.blob).open);
    records.push({ digest: layer.desc.digest, mediaType: layer.desc.mediaType, size: layer.desc.size, diffId: layer.diffId, chainId: chains[i]! });
  }
  const config = Buffer.from(
    JSON.stringify({
      architecture: 'amd64',
      os: 'linux',
      config: { User: options.user ?? '', Env: ['PATH=/bin'], Labels: options.label ? { label: options.label } : {} },
      rootfs: { type: 'layers', diff_ids: layers.map((l) => l.diffId) },
    }),
  );
  const configDigest = sha256(config);
  await store.putBlob({ mediaType: 'application/vnd.oci.image.config.v1+json', digest: configDigest, size: config.length }, config);
  const manifestDigest = sha256(`manifest for ${configDigest}`);
  return store.addImage({
    id: configDigest,
    repoTags: options.tags ?? [],
    repoDigests: options.repoDigests ?? [],
    manifestDigest,
    configSize: config.length,
    layers: records,
    size: config.length + records.reduce((sum, l) => sum + l.size, 0),
    user: options.user ?? '',
    pinned: false,
    annotations: {},
    platform: { os: 'linux', architecture: 'amd64' },
  });
}

/** A one-file layer whose content makes it unique. */
export function simpleLayer(content: string, compression: 'gzip' | 'zstd' | 'none' = 'gzip'): LayerFixture {
  const tar = buildTar([
    { name: 'etc/', type: '5' },
    { name: `etc/${sha256(content).slice(7, 19)}`, data: content },
  ]);
  return layerFixture(tar, compression);
}
