import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { once } from 'node:events';
import { existsSync, readFileSync, readdirSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { ImageStore } from './image-store.js';
import type { ImageRecord, SnapshotMeta } from './types.js';
import { buildTar } from './testing/tar-builder.js';
import { addTestImage, layerFixture, opener, quietLogger, sha256, simpleLayer, tempDir, type LayerFixture } from './testing/fixtures.js';

const logger = quietLogger();
const hex = (digest: string): string => digest.slice('sha256:'.length);
const blobPath = (root: string, digest: string): string => join(root, 'blobs', 'sha256', hex(digest));
const metaPath = (root: string, chainId: string): string => join(root, 'snapshots', hex(chainId), 'meta.json');
const readMeta = (root: string, chainId: string): SnapshotMeta => JSON.parse(readFileSync(metaPath(root, chainId), 'utf8')) as SnapshotMeta;

/**
 * A store as the format that kept layer blobs left it: every layer blob stored beside the
 * config, and meta.json without blobDigests.
 */
async function storeWithLayerBlobs(layersOf: LayerFixture[][]): Promise<{ root: string; images: ImageRecord[] }> {
  const root = tempDir('migrate');
  const store = await ImageStore.open(root, { logger, writer: true });
  const images: ImageRecord[] = [];
  try {
    for (const [i, layers] of layersOf.entries()) images.push(await addTestImage(store, layers, { tags: [`old${i}:1`], label: String(i) }));
  } finally {
    await store.close();
  }
  for (const [i, image] of images.entries()) {
    image.layers.forEach((layer, n) => {
      writeFileSync(blobPath(root, layer.digest), layersOf[i]![n]!.blob, { mode: 0o600 });
      const { blobDigests: _dropped, ...meta } = readMeta(root, layer.chainId);
      writeFileSync(metaPath(root, layer.chainId), JSON.stringify(meta), { mode: 0o600 });
    });
  }
  return { root, images };
}

test('a store that kept layer blobs is migrated on open: their digests go into the snapshots, the blobs go', async () => {
  const gz = simpleLayer('shared layer', 'gzip');
  const zst = layerFixture(gz.tar, 'zstd');
  const { root, images } = await storeWithLayerBlobs([[gz, simpleLayer('only in one')], [zst]]);
  const [one, two] = images as [ImageRecord, ImageRecord];
  assert.equal(one.layers[0]!.chainId, two.layers[0]!.chainId, 'both images stack the same bottom layer');

  const store = await ImageStore.open(root, { logger, writer: true });
  try {
    assert.deepEqual(readdirSync(join(root, 'blobs', 'sha256')).sort(), [hex(one.id), hex(two.id)].sort(), 'only the configs are left');
    assert.deepEqual(readMeta(root, one.layers[0]!.chainId).blobDigests?.sort(), [gz.desc.digest, zst.desc.digest].sort(), 'every stored blob of the layer');
    assert.deepEqual(readMeta(root, one.layers[1]!.chainId).blobDigests, [one.layers[1]!.digest]);
    const { lowerDirs } = await store.resolveRootfs('old0:1');
    assert.equal(readFileSync(join(lowerDirs[1]!, 'etc', sha256('shared layer').slice(7, 19)), 'utf8'), 'shared layer');
    const info = await store.fsInfo();
    const metas = [one.layers[0]!, one.layers[1]!].map((l) => readMeta(root, l.chainId));
    const configBytes = [one.id, two.id].reduce((sum, id) => sum + statSync(blobPath(root, id)).size, 0);
    assert.equal(info.usedBytes, configBytes + metas.reduce((sum, m) => sum + m.size, 0), 'ImageFsInfo counts no layer blob');
  } finally {
    await store.close();
  }

  // Again: nothing is left to migrate, nothing is rewritten.
  const before = statSync(metaPath(root, one.layers[0]!.chainId)).mtimeMs;
  const again = await ImageStore.open(root, { logger, writer: true });
  try {
    assert.equal(statSync(metaPath(root, one.layers[0]!.chainId)).mtimeMs, before);
    assert.equal((await again.find('old1:1'))?.id, two.id);
  } finally {
    await again.close();
  }
});

test('a migration cut short by a crash is finished by the next open', async () => {
  const { root, images } = await storeWithLayerBlobs([[simpleLayer('first'), simpleLayer('second')]]);
  const [bottom, top] = images[0]!.layers as [ImageRecord['layers'][0], ImageRecord['layers'][0]];
  // The crash came after the bottom snapshot's meta.json was replaced, while the top one's was
  // being written (its temp file is there), and before any blob was deleted.
  const migrated = { ...readMeta(root, bottom.chainId), blobDigests: [bottom.digest] };
  writeFileSync(metaPath(root, bottom.chainId), JSON.stringify(migrated), { mode: 0o600 });
  const debris = join(root, 'snapshots', hex(top.chainId), '.meta.json.0123456789ab.tmp');
  writeFileSync(debris, '{"diffId":', { mode: 0o600 });

  const store = await ImageStore.open(root, { logger, writer: true });
  try {
    assert.deepEqual(readMeta(root, bottom.chainId).blobDigests, [bottom.digest], 'not recorded twice');
    assert.deepEqual(readMeta(root, top.chainId).blobDigests, [top.digest]);
    assert.ok(!existsSync(debris), 'the cut-short rewrite is removed');
    assert.ok(!existsSync(blobPath(root, bottom.digest)) && !existsSync(blobPath(root, top.digest)));
    assert.equal((await store.resolveRootfs('old0:1')).lowerDirs.length, 2);
  } finally {
    await store.close();
  }
});

test('a writer killed with SIGKILL mid-pull leaves no layer blob and nothing half-made; the next writer pulls the layer again', async () => {
  const root = tempDir('killed-pull');
  const layer = layerFixture(buildTar([{ name: 'big.bin', data: randomBytes(4 * 1024 * 1024) }]));
  // A writer in a process of its own, downloading the layer: half of it, then the connection hangs.
  const script = `
    import { Readable } from 'node:stream';
    import { ImageStore } from ${JSON.stringify(new URL('./image-store.js', import.meta.url).href)};
    import { quietLogger } from ${JSON.stringify(new URL('./testing/fixtures.js', import.meta.url).href)};
    import { readFileSync } from 'node:fs';
    const [root, desc, diffId, halfFile] = process.argv.slice(1);
    const store = await ImageStore.open(root, { logger: quietLogger(), writer: true });
    let sent = false;
    const source = new Readable({ read() { if (!sent) { sent = true; this.push(readFileSync(halfFile)); process.stdout.write('sent\\n'); } } });
    // A hung connection holds its socket: without a handle of its own, the process would end by
    // itself once the half was unpacked, before the kill.
    setInterval(() => {}, 60_000);
    await store.ingestLayer({ desc: JSON.parse(desc), diffId, chainId: diffId }, async () => source);
  `;
  const half = join(tempDir('killed-pull-half'), 'half');
  writeFileSync(half, layer.blob.subarray(0, layer.blob.length >> 1));
  const child = spawn(process.execPath, ['--input-type=module', '-e', script, root, JSON.stringify(layer.desc), layer.diffId, half], { stdio: ['ignore', 'pipe', 'inherit'] });
  const exited = once(child, 'exit');
  await once(child.stdout!, 'data');
  const unpacking = (): boolean => readdirSync(join(root, 'snapshots')).some((name) => name.startsWith('.tmp-') && existsSync(join(root, 'snapshots', name, 'fs', 'big.bin')));
  for (let i = 0; i < 500 && !unpacking(); i++) await sleep(10);
  assert.ok(unpacking(), 'the layer was being unpacked when the writer was killed');
  child.kill('SIGKILL');
  assert.deepEqual(await exited, [null, 'SIGKILL'], 'the writer was killed mid-pull, not ended by itself');
  assert.deepEqual(readdirSync(join(root, 'blobs', 'sha256')), [], 'no compressed bytes were ever written to the store');
  assert.deepEqual(readdirSync(join(root, 'ingest')), []);

  const store = await ImageStore.open(root, { logger, writer: true });
  try {
    assert.deepEqual(readdirSync(join(root, 'snapshots')), [], 'the half-made unpack is gone');
    const source = opener(layer.blob);
    await store.ingestLayer({ desc: layer.desc, diffId: layer.diffId, chainId: layer.diffId }, source.open);
    assert.equal(source.calls(), 1);
    assert.deepEqual(readdirSync(join(root, 'snapshots')), [hex(layer.diffId)]);
    assert.deepEqual(readdirSync(join(root, 'blobs', 'sha256')), []);
  } finally {
    await store.close();
  }
});
