/**
 * Hostile images served by a real registry and pulled through image-svc's CRI PullImage: each
 * names the status it must get, must leave nothing in the store, and must not stop image-svc
 * serving. The extraction limits are set low in this instance's skiff.toml, so a bomb needs only
 * a few MiB of tar.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readdirSync } from 'node:fs';
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { gzipSync } from 'node:zlib';
import { status } from '@grpc/grpc-js';
import { callUnary, type ImageServiceClient } from '@skiff/proto';
import { startRegistry, type Registry } from './lib/registry.js';
import { pushTestImage } from './lib/image-catalogue.js';
import { startSkiff, type SkiffInstance } from './lib/skiff-instance.js';
import { rejectsWithCode } from './lib/grpc-assert.js';
import { buildLayer, type Layer } from './lib/layer-builder.js';
import { writeBlob } from './lib/blob-dir.js';
import { layerMediaType } from './lib/media-types.js';
import { buildImage } from './lib/oci-image.js';
import { pushImage } from './lib/push.js';
import { sha256Digest } from './lib/sha256.js';
import type { TarEntry } from './lib/tar-writer.js';
import { makeTempDir, removeDir } from './lib/tmp.js';

const MiB = 1024 * 1024;
const LIMITS = { max_layer_bytes: 16 * MiB, max_layer_entries: 2000, max_pax_header_bytes: 64 * 1024 };

interface HostileCase {
  name: string;
  code: status;
  message: RegExp;
  /** The layer that must be refused (its blob must not be stored). */
  layer?: () => Promise<Layer>;
  /** A catalogue image instead of a hand-made layer. */
  catalogue?: 'traversal-dotdot' | 'traversal-abs' | 'traversal-symlink';
  /** Replaces the pushed blob in the registry's storage, after the push. */
  tamper?: (registry: Registry, layer: Layer) => Promise<void>;
}

let registry: Registry;
let skiff: SkiffInstance;
let images: ImageServiceClient;
let work: string;
const references = new Map<string, { reference: string; layerDigest?: string }>();

function file(name: string, content: string | Buffer): TarEntry {
  return { type: 'file', name, content, mode: 0o644 };
}

function* zeroChunks(size: number): Generator<Buffer> {
  for (let offset = 0; offset < size; offset += MiB) yield Buffer.alloc(Math.min(MiB, size - offset));
}

/** One file of zeros: a few KiB compressed. */
function zeros(size: number): TarEntry {
  return { type: 'file', name: 'bomb', mode: 0o644, content: { size, open: () => Readable.from(zeroChunks(size)) } };
}

/** A raw ustar header; enough for the PAX global ('g') headers tar-writer has no entry type for. */
function rawHeader(name: string, typeflag: string, size: number): Buffer {
  const block = Buffer.alloc(512);
  block.write(name, 0, 100, 'utf8');
  block.write('0000644\0', 100, 'ascii');
  block.write('0000000\0', 108, 'ascii');
  block.write('0000000\0', 116, 'ascii');
  block.write(`${size.toString(8).padStart(11, '0')}\0`, 124, 'ascii');
  block.write('14000000000\0', 136, 'ascii');
  block.fill(0x20, 148, 156);
  block.write(typeflag, 156, 'ascii');
  block.write('ustar\0' + '00', 257, 'ascii');
  let sum = 0;
  for (const byte of block) sum += byte;
  block.write(`${sum.toString(8).padStart(6, '0')}\0 `, 148, 'ascii');
  return block;
}

function padded(data: Buffer): Buffer {
  return Buffer.concat([data, Buffer.alloc((512 - (data.length % 512)) % 512)]);
}

function paxRecord(key: string, value: string): Buffer {
  const body = ` ${key}=${value}\n`;
  let length = body.length + 1;
  while (String(length).length + body.length !== length) length = String(length).length + body.length;
  return Buffer.from(`${length}${body}`);
}

/** Global PAX headers, each under the limit, that add up to more than it; then one small file. */
async function globalPaxLayer(blobDir: string): Promise<Layer> {
  const parts: Buffer[] = [];
  for (let i = 0; i < 4; i++) {
    const records = paxRecord(`comment.${i}`, 'g'.repeat(40 * 1024));
    parts.push(rawHeader('pax_global_header', 'g', records.length), padded(records));
  }
  const content = Buffer.from('after the global headers\n');
  parts.push(rawHeader('file', '0', content.length), padded(content), Buffer.alloc(1024));
  const tar = Buffer.concat(parts);
  const blob = await writeBlob(blobDir, gzipSync(tar), layerMediaType('oci', 'gzip'));
  return { digest: blob.digest, size: blob.size, diffId: sha256Digest(tar), uncompressedSize: tar.length, compression: 'gzip', path: blob.path };
}

function cases(blobDir: string): HostileCase[] {
  const gzip = (entries: TarEntry[], level = 6) => () => buildLayer(entries, { blobDir, gzipLevel: level });
  const exhausted = (limit: string) => new RegExp(`${limit.replace('.', '\\.')}`);
  return [
    { name: 'gzip-bomb', code: status.RESOURCE_EXHAUSTED, message: exhausted('image.max_layer_bytes'), layer: gzip([zeros(64 * MiB)], 9) },
    { name: 'zstd-bomb', code: status.RESOURCE_EXHAUSTED, message: exhausted('image.max_layer_bytes'), layer: () => buildLayer([zeros(64 * MiB)], { blobDir, compression: 'zstd', zstdLevel: 19 }) },
    {
      name: 'entry-flood',
      code: status.RESOURCE_EXHAUSTED,
      message: exhausted('image.max_layer_entries'),
      layer: gzip(Array.from({ length: 5000 }, (_, i) => file(`flood/${i}`, ''))),
    },
    { name: 'pax-local', code: status.RESOURCE_EXHAUSTED, message: exhausted('image.max_pax_header_bytes'), layer: gzip([{ ...file('x', 'x'), pax: { comment: 'c'.repeat(256 * 1024) } }]) },
    { name: 'pax-global', code: status.RESOURCE_EXHAUSTED, message: exhausted('image.max_pax_header_bytes'), layer: () => globalPaxLayer(blobDir) },
    {
      name: 'digest-mismatch',
      code: status.FAILED_PRECONDITION,
      message: /failed verification: expected digest/,
      // Uncompressed, so the served bytes are a valid tar of the same size: only the digest tells.
      layer: () => buildLayer([file('data', Buffer.alloc(4 * MiB, 'a'))], { blobDir, compression: 'none' }),
      tamper: async (reg, layer) => {
        const other = await buildLayer([file('data', Buffer.alloc(4 * MiB, 'b'))], { blobDir, compression: 'none' });
        assert.equal(other.size, layer.size);
        await writeFile(reg.blobDataPath(layer.digest), await readFile(other.path));
      },
    },
    { name: 'symlink-escape', code: status.FAILED_PRECONDITION, message: /symbolic link, not a directory/, catalogue: 'traversal-symlink' },
    {
      name: 'hardlink-through-symlink',
      code: status.FAILED_PRECONDITION,
      message: /hard link whose target "evil\/etc\/passwd" goes through "evil", which is a symbolic link/,
      layer: gzip([{ type: 'symlink', name: 'evil', target: '/' }, { type: 'hardlink', name: 'passwd', target: 'evil/etc/passwd' }]),
    },
    { name: 'hardlink-dotdot', code: status.FAILED_PRECONDITION, message: /hard link target with a "\.\." component/, layer: gzip([{ type: 'hardlink', name: 'passwd', target: '../../../../etc/passwd' }]) },
    { name: 'hardlink-absolute', code: status.FAILED_PRECONDITION, message: /absolute hard link target "\/etc\/passwd"/, layer: gzip([{ type: 'hardlink', name: 'passwd', target: '/etc/passwd' }]) },
    { name: 'dotdot-name', code: status.FAILED_PRECONDITION, message: /"\.\." component/, catalogue: 'traversal-dotdot' },
    { name: 'absolute-name', code: status.FAILED_PRECONDITION, message: /absolute path "\/abs-escape"/, catalogue: 'traversal-abs' },
  ];
}

function storeDir(...parts: string[]): string {
  return join(skiff.root, 'images', ...parts);
}

/** Work in progress a failed pull could leave: ingest files and snapshot temp dirs. */
function debris(): string[] {
  const ingest = existsSync(storeDir('ingest')) ? readdirSync(storeDir('ingest')).map((f) => `ingest/${f}`) : [];
  return [...ingest, ...readdirSync(storeDir('snapshots')).filter((f) => f.startsWith('.')).map((f) => `snapshots/${f}`)];
}

function snapshots(): string[] {
  return readdirSync(storeDir('snapshots')).filter((f) => !f.startsWith('.')).sort();
}

function pull(image: string): Promise<{ image_ref: string }> {
  return callUnary(images, 'PullImage', { image: { image } }, { timeoutMs: 120_000 });
}

let blobDir: string;
let hostile: HostileCase[];
let imageSvcPid: number | undefined;
let busybox: string;

before(async () => {
  work = await makeTempDir('skiff-e2e-hostile');
  blobDir = join(work, 'blobs');
  registry = await startRegistry();
  hostile = cases(blobDir);
  for (const c of hostile) {
    if (c.catalogue) {
      references.set(c.name, { reference: (await pushTestImage(registry, c.catalogue)).reference });
      continue;
    }
    const layer = await c.layer!();
    const image = await buildImage({ blobDir, layers: [layer], config: { Cmd: ['sh'] } });
    await pushImage(registry, `skiff/hostile-${c.name}`, 'latest', image);
    await c.tamper?.(registry, layer);
    references.set(c.name, { reference: `${registry.host}/skiff/hostile-${c.name}:latest`, layerDigest: layer.digest });
  }
  busybox = (await pushTestImage(registry, 'busybox')).reference;

  skiff = await startSkiff({ imageConfig: Object.entries(LIMITS).map(([key, value]) => `${key} = ${value}`).join('\n') });
  images = skiff.imageClient();
  imageSvcPid = await skiff.servicePid('image-svc');
});

after(async () => {
  await skiff?.stop();
  await registry?.stop();
  await removeDir(work);
});

describe('hostile images are refused with a clear status and leave nothing behind', () => {
  // Registered from a fixed list so the test names exist before `before` builds the images.
  for (const name of ['gzip-bomb', 'zstd-bomb', 'entry-flood', 'pax-local', 'pax-global', 'digest-mismatch', 'symlink-escape', 'hardlink-through-symlink', 'hardlink-dotdot', 'hardlink-absolute', 'dotdot-name', 'absolute-name']) {
    test(name, async () => {
      const c = hostile.find((h) => h.name === name);
      assert.ok(c, `case ${name} is defined`);
      const { reference, layerDigest } = references.get(name)!;
      const before = snapshots();
      const err = await rejectsWithCode(pull(reference), c.code, c.message);
      if (layerDigest) assert.ok(err.details.includes(layerDigest), `the error names the layer: ${err.details}`);
      assert.deepEqual(debris(), [], 'no temp files or dirs');
      assert.deepEqual(snapshots(), before, 'no new snapshot');
      if (layerDigest) assert.ok(!existsSync(storeDir('blobs', 'sha256', layerDigest.slice(7))), 'the layer blob is not stored');
      const { image } = await callUnary(images, 'ImageStatus', { image: { image: reference } }, { timeoutMs: 10_000 });
      assert.equal(image, null);
      assert.ok(!existsSync('/tmp/skiff-escape') && !existsSync('/abs-escape') && !existsSync(storeDir('snapshots', 'escape')));
    });
  }

  test('image-svc kept serving throughout: same process, and a good image still pulls', async () => {
    assert.equal(await skiff.servicePid('image-svc'), imageSvcPid);
    const { image_ref } = await pull(busybox);
    assert.match(image_ref, /^sha256:[0-9a-f]{64}$/);
    assert.deepEqual(debris(), []);
  });
});
