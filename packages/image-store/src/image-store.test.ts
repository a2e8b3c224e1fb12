import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { existsSync, mkdirSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { InvalidReferenceError } from '@skiff/reference';
import { ImageStore } from './image-store.js';
import { StoreError } from './errors.js';
import type { ImageRecord } from './types.js';
import { syncFilesystems } from './unpack/special-files.js';
import { addTestImage, opener, quietLogger, sha256, simpleLayer, tempDir } from './testing/fixtures.js';

const logger = quietLogger();

function openWriter(root: string, gcGracePeriodMs?: number): Promise<ImageStore> {
  return ImageStore.open(root, gcGracePeriodMs === undefined ? { logger, writer: true } : { logger, writer: true, gcGracePeriodMs });
}

function openReader(root: string): Promise<ImageStore> {
  return ImageStore.open(root, { logger, writer: false });
}

function blobNames(root: string): string[] {
  return readdirSync(join(root, 'blobs', 'sha256')).sort();
}

function snapshotNames(root: string): string[] {
  return readdirSync(join(root, 'snapshots')).sort();
}

const hex = (digest: string): string => digest.slice('sha256:'.length);

async function startSleeper(): Promise<ReturnType<typeof spawn>> {
  const child = spawn('sleep', ['60'], { stdio: 'ignore' });
  await once(child, 'spawn');
  return child;
}

test('writer lock: one writer per store, held locks name their pid, stale locks are taken over', async () => {
  const root = tempDir('lock');
  const store = await openWriter(root);
  assert.equal(readFileSync(join(root, 'writer.lock'), 'utf8').split('\n')[0], String(process.pid));
  await assert.rejects(openWriter(root), (err: unknown) => err instanceof StoreError && err.kind === 'locked');
  await store.close();
  assert.ok(!existsSync(join(root, 'writer.lock')), 'close releases the lock');

  const holder = await startSleeper();
  try {
    writeFileSync(join(root, 'writer.lock'), `${holder.pid}\n`);
    await assert.rejects(openWriter(root), (err: unknown) => {
      assert.ok(err instanceof StoreError && err.kind === 'locked');
      assert.match(err.message, new RegExp(`process ${holder.pid}\\b`));
      return true;
    });
  } finally {
    holder.kill('SIGKILL');
    await once(holder, 'exit');
  }
  // The holder is dead now: its lock is stale.
  const takeover = await openWriter(root);
  assert.equal(readFileSync(join(root, 'writer.lock'), 'utf8').split('\n')[0], String(process.pid));
  await takeover.close();
});

test('a reader sees images the writer adds and removes', async () => {
  const root = tempDir('reader');
  const reader = await openReader(root);
  assert.deepEqual(await reader.list(), []);
  const writer = await openWriter(root);
  try {
    const image = await addTestImage(writer, [simpleLayer('base'), simpleLayer('app')], { tags: ['example.com/app:v1'] });
    const seen = await reader.find('example.com/app:v1');
    assert.equal(seen?.id, image.id);
    assert.equal((await reader.list()).length, 1);
    const rootfs = await reader.resolveRootfs(image.id);
    assert.deepEqual(rootfs.lowerDirs, writer.snapshotDirs(image));
    assert.deepEqual(rootfs.config.rootfs.diff_ids, image.layers.map((l) => l.diffId));
    assert.equal(await writer.removeImage('example.com/app:v1'), 'removed');
    assert.equal(await reader.find('example.com/app:v1'), undefined);
    await assert.rejects(reader.putBlob({ mediaType: 'x', digest: sha256('a'), size: 1 }, Buffer.from('a')), /writer/);
  } finally {
    await writer.close();
    await reader.close();
  }
});

test('find: by id, bare hex, familiar name, repo digest, manifest digest; invalid references throw', async () => {
  const root = tempDir('find');
  const store = await openWriter(root);
  try {
    const indexDigest = sha256('an index');
    const image = await addTestImage(store, [simpleLayer('busybox')], {
      tags: ['busybox'],
      repoDigests: [`busybox@${indexDigest}`],
    });
    assert.deepEqual(image.repoTags, ['docker.io/library/busybox:latest']);
    assert.deepEqual(image.repoDigests, [`docker.io/library/busybox@${indexDigest}`]);
    for (const ref of [image.id, hex(image.id), 'busybox', 'busybox:latest', 'docker.io/library/busybox:latest', `busybox@${indexDigest}`, `docker.io/library/busybox@${image.manifestDigest}`]) {
      assert.equal((await store.find(ref))?.id, image.id, ref);
    }
    assert.equal(await store.find('busybox:other'), undefined);
    assert.equal(await store.find(`sha256:${'0'.repeat(64)}`), undefined);
    await assert.rejects(store.find('Not A Valid Ref!'), InvalidReferenceError);
    await assert.rejects(store.removeImage('app@sha256:not-hex'), InvalidReferenceError);
    assert.throws(() => ((image as { repoTags: string[] }).repoTags.push('x')), TypeError, 'records are read-only');
  } finally {
    await store.close();
  }
});

test('tags move between images; a re-pull merges tags and digests and keeps createdAt', async () => {
  const root = tempDir('tags');
  const store = await openWriter(root);
  try {
    const a = await addTestImage(store, [simpleLayer('a')], { tags: ['app:latest', 'app:1'] });
    const b = await addTestImage(store, [simpleLayer('b')], { tags: ['app:latest'] });
    assert.deepEqual((await store.find(a.id))?.repoTags, ['docker.io/library/app:1']);
    assert.equal((await store.find('app'))?.id, b.id);
    await new Promise((resolve) => setTimeout(resolve, 5));
    const again = await addTestImage(store, [simpleLayer('a')], { tags: ['app:2'], repoDigests: [`app@${sha256('idx')}`] });
    assert.equal(again.id, a.id);
    assert.deepEqual(again.repoTags, ['docker.io/library/app:1', 'docker.io/library/app:2']);
    assert.deepEqual(again.repoDigests, [`docker.io/library/app@${sha256('idx')}`]);
    assert.equal(again.createdAt, a.createdAt);
    assert.equal((await store.list()).length, 2);
  } finally {
    await store.close();
  }
});

test('removeImage untags, removes, and garbage-collects only unshared content', async () => {
  const root = tempDir('remove');
  const store = await openWriter(root);
  try {
    const shared = simpleLayer('shared base');
    const a = await addTestImage(store, [shared, simpleLayer('only a')], { tags: ['a:1', 'a:2'], label: 'a' });
    const b = await addTestImage(store, [shared, simpleLayer('only b')], { tags: ['b:1'], repoDigests: [`b@${sha256('b index')}`], label: 'b' });
    assert.equal(snapshotNames(root).length, 3);
    assert.deepEqual(blobNames(root), [hex(a.id), hex(b.id)].sort(), 'the configs; no layer blob is kept');

    assert.equal(await store.removeImage('a:1'), 'untagged');
    assert.deepEqual((await store.find(a.id))?.repoTags, ['docker.io/library/a:2']);
    assert.equal(await store.removeImage('a:2'), 'removed');
    assert.equal(await store.find(a.id), undefined);
    assert.deepEqual(snapshotNames(root), [hex(b.layers[0]!.chainId), hex(b.layers[1]!.chainId)].sort());
    assert.deepEqual(blobNames(root), [hex(b.id)]);

    assert.equal(await store.removeImage('a:2'), 'absent');
    assert.equal(await store.removeImage(`b@${sha256('b index')}`), 'removed');
    assert.deepEqual(snapshotNames(root), []);
    assert.deepEqual(blobNames(root), []);

    const c = await addTestImage(store, [simpleLayer('c')], { tags: ['c:1', 'c:2'] });
    assert.equal(await store.removeImage(hex(c.id)), 'removed', 'by id removes whatever the tags');
    assert.deepEqual(await store.list(), []);
    assert.deepEqual(JSON.parse(readFileSync(join(root, 'images.json'), 'utf8')), { version: 1, images: [] });
  } finally {
    await store.close();
  }
});

test('gc spares content a pull in progress has touched, until its record exists or the grace period ends', async () => {
  const root = tempDir('grace');
  const store = await openWriter(root);
  const layer = simpleLayer('pulling');
  try {
    await store.ingestLayer({ desc: layer.desc, diffId: layer.diffId, chainId: layer.diffId }, opener(layer.blob).open);
    assert.deepEqual(await store.gc(), { blobsRemoved: 0, snapshotsRemoved: 0 });
    assert.deepEqual(snapshotNames(root), [hex(layer.diffId)]);
  } finally {
    await store.close();
  }
  const shortGrace = await openWriter(root, 0);
  try {
    assert.deepEqual(snapshotNames(root), [], 'unreferenced content is debris when the writer opens');
    assert.deepEqual(blobNames(root), []);
  } finally {
    await shortGrace.close();
  }
});

test('opening as writer removes debris of a killed process and unreferenced content', async () => {
  const root = tempDir('debris');
  const first = await openWriter(root);
  const image = await addTestImage(first, [simpleLayer('kept')], { tags: ['kept:1'] });
  await first.close();

  writeFileSync(join(root, 'ingest', `${'a'.repeat(64)}.partial`), 'half a download');
  mkdirSync(join(root, 'snapshots', '.tmp-deadbeef', 'fs', 'usr'), { recursive: true });
  writeFileSync(join(root, 'snapshots', '.tmp-deadbeef', 'fs', 'usr', 'file'), 'half an unpack');
  writeFileSync(join(root, 'blobs', 'sha256', 'b'.repeat(64)), 'orphan blob');
  mkdirSync(join(root, 'snapshots', 'c'.repeat(64), 'fs'), { recursive: true });
  writeFileSync(join(root, 'writer.lock'), '999999999\n');

  const second = await openWriter(root);
  try {
    assert.deepEqual(readdirSync(join(root, 'ingest')), []);
    assert.deepEqual(snapshotNames(root), [hex(image.layers[0]!.chainId)]);
    assert.deepEqual(blobNames(root), [hex(image.id)]);
    assert.equal((await second.find('kept:1'))?.id, image.id);
  } finally {
    await second.close();
  }
});

test('layers published but never recorded (a pull killed before its one sync and its record) are removed at the next open', async () => {
  const root = tempDir('unrecorded');
  const first = await openWriter(root);
  const kept = await addTestImage(first, [simpleLayer('recorded')], { tags: ['recorded:1'] });
  const layer = simpleLayer('published, not yet synced');
  await first.ingestLayer({ desc: layer.desc, diffId: layer.diffId, chainId: layer.diffId }, opener(layer.blob).open);
  assert.ok(snapshotNames(root).includes(hex(layer.diffId)), 'the layer is published before any sync');
  assert.ok(!blobNames(root).includes(hex(layer.desc.digest)), 'its compressed blob is not kept');
  await first.close();

  const second = await openWriter(root);
  try {
    assert.deepEqual(snapshotNames(root), [hex(kept.layers[0]!.chainId)]);
    assert.deepEqual(blobNames(root), [hex(kept.id)]);
    assert.equal((await second.find('recorded:1'))?.id, kept.id);
  } finally {
    await second.close();
  }
});

test('a pull of several layers is synced once, before its record is written', async () => {
  const root = tempDir('one-sync');
  const syncs: { recordedBefore: boolean }[] = [];
  const store = await ImageStore.open(root, {
    logger,
    writer: true,
    syncFilesystems: async (paths) => {
      const index = existsSync(join(root, 'images.json')) ? readFileSync(join(root, 'images.json'), 'utf8') : '';
      syncs.push({ recordedBefore: index.includes('synced:1') });
      await syncFilesystems(paths);
    },
  });
  try {
    const image = await addTestImage(store, [simpleLayer('one'), simpleLayer('two'), simpleLayer('three')], { tags: ['synced:1'] });
    assert.equal(image.layers.length, 3);
    assert.deepEqual(syncs, [{ recordedBefore: false }], 'one sync, and the record was not written before it');
    await addTestImage(store, [simpleLayer('one'), simpleLayer('two'), simpleLayer('three')], { tags: ['synced:2'] });
    assert.equal(syncs.length, 1, 'nothing new was published: no second sync');
  } finally {
    await store.close();
  }
});

test('resolveRootfs gives top-first lower dirs and reports missing snapshots; fsInfo counts content', async () => {
  const root = tempDir('rootfs');
  const store = await openWriter(root);
  try {
    const image = await addTestImage(store, [simpleLayer('one'), simpleLayer('two'), simpleLayer('three')], { tags: ['three:1'], user: '1000:1000' });
    assert.equal(image.user, '1000:1000');
    const { lowerDirs } = await store.resolveRootfs('three:1');
    assert.deepEqual(lowerDirs, image.layers.map((l) => join(root, 'snapshots', hex(l.chainId), 'fs')).reverse());

    const info = await store.fsInfo();
    assert.deepEqual(blobNames(root), [hex(image.id)], 'the config is the one blob');
    const blobBytes = blobNames(root).reduce((sum, name) => sum + readFileSync(join(root, 'blobs', 'sha256', name)).length, 0);
    const metas = snapshotNames(root).map((name) => JSON.parse(readFileSync(join(root, 'snapshots', name, 'meta.json'), 'utf8')));
    assert.equal(info.mountpoint, root);
    assert.equal(info.usedBytes, blobBytes + metas.reduce((sum, m) => sum + m.size, 0));
    assert.equal(info.inodesUsed, blobNames(root).length + metas.reduce((sum, m) => sum + m.inodes + 2, 0));

    rmSync(join(root, 'snapshots', hex(image.layers[1]!.chainId)), { recursive: true });
    await assert.rejects(store.resolveRootfs('three:1'), (err: unknown) => err instanceof StoreError && err.kind === 'not-found' && err.message.includes(image.layers[1]!.chainId));
    await assert.rejects(store.resolveRootfs('missing:1'), (err: unknown) => err instanceof StoreError && err.kind === 'not-found');
    await assert.rejects(store.readBlob(sha256('nothing')), (err: unknown) => err instanceof StoreError && err.kind === 'not-found');
  } finally {
    await store.close();
  }
});

test('addImage refuses records whose content is not committed', async () => {
  const root = tempDir('add-missing');
  const store = await openWriter(root);
  try {
    const layer = simpleLayer('never ingested');
    await assert.rejects(
      store.addImage({
        id: sha256('config'),
        repoTags: ['x:1'],
        repoDigests: [],
        manifestDigest: sha256('manifest'),
        configSize: 6,
        layers: [{ digest: layer.desc.digest, mediaType: layer.desc.mediaType, size: layer.desc.size, diffId: layer.diffId, chainId: layer.diffId }],
        size: 6 + layer.desc.size,
        user: '',
        pinned: false,
        annotations: {},
        platform: { os: 'linux', architecture: 'amd64' },
      }),
      (err: unknown) => err instanceof StoreError && err.kind === 'not-found',
    );
    assert.ok(!existsSync(join(root, 'images.json')));
  } finally {
    await store.close();
  }
});

test('list() and find() over 500 images answer from the writer and a reader', async () => {
  const root = tempDir('perf');
  const writer = await openWriter(root);
  const base = await addTestImage(writer, [simpleLayer('perf base')], { tags: ['perf:base'] });
  await writer.close();
  const images: ImageRecord[] = Array.from({ length: 500 }, (_, i) => ({
    ...base,
    id: sha256(`config ${i}`),
    repoTags: [`registry.example.com/team/app-${i}:v${i}`],
    repoDigests: [`registry.example.com/team/app-${i}@${sha256(`index ${i}`)}`],
    annotations: { 'org.opencontainers.image.title': `app ${i}` },
  }));
  writeFileSync(join(root, 'images.json'), JSON.stringify({ version: 1, images: [base, ...images] }));

  const store = await openWriter(root);
  const reader = await openReader(root);
  try {
    // How fast ListImages answers with 500 images is a figure of bench/dist/image-service.js.
    for (const [name, s] of [['writer', store], ['reader', reader]] as const) {
      assert.equal((await s.list()).length, 501, name);
      for (const i of [0, 250, 499]) assert.equal((await s.find(`registry.example.com/team/app-${i}:v${i}`))?.id, sha256(`config ${i}`), `${name} finds app-${i}`);
      assert.equal(await s.find('registry.example.com/team/app-500:v500'), undefined, name);
    }
  } finally {
    await store.close();
    await reader.close();
  }
});

test('a lease keeps an image snapshots alive after the image is removed, until it is released', async () => {
  const root = tempDir('lease');
  const store = await openWriter(root);
  const reader = await openReader(root);
  try {
    const image = await addTestImage(store, [simpleLayer('leased base'), simpleLayer('leased top')], { tags: ['leased:1'] });
    const found = (await reader.find('leased:1'))!;
    const lowerDirs = await reader.acquireLease('container-1', found);
    assert.deepEqual(lowerDirs, reader.snapshotDirs(found));
    assert.deepEqual((await store.listLeases()).map((l) => l.holder), ['container-1']);

    assert.equal(await store.removeImage('leased:1'), 'removed');
    for (const dir of lowerDirs) assert.ok(existsSync(dir), `${dir} must survive while leased`);
    await assert.rejects(reader.acquireLease('../escape', found), (e: Error) => e instanceof StoreError && e.kind === 'unsafe-path');

    await reader.releaseLease('container-1');
    await store.gc();
    assert.deepEqual(snapshotNames(root), []);
    await assert.rejects(reader.acquireLease('container-2', image), (e: Error) => e instanceof StoreError && e.kind === 'not-found');
    assert.deepEqual(await store.listLeases(), [], 'a failed lease is not left behind');
  } finally {
    await reader.close();
    await store.close();
  }
});

test('a lease held before it is on disk; one a crash cut short protects nothing and does not stop collection', async () => {
  const root = tempDir('lease');
  const store = await openWriter(root);
  const reader = await openReader(root);
  try {
    await addTestImage(store, [simpleLayer('kept')], { tags: ['kept:1'] });
    await addTestImage(store, [simpleLayer('dropped')], { tags: ['dropped:1'] });
    const kept = (await reader.find('kept:1'))!;
    const { durable } = await reader.acquireLeaseNow('container-1', kept);
    assert.deepEqual((await store.listLeases()).map((l) => l.holder), ['container-1'], 'it holds before it is on disk');
    await durable;
    // What a crash of the machine can leave of a lease written just before it: an empty file.
    writeFileSync(join(root, 'leases', 'container-2.json'), '');
    assert.deepEqual(await store.listLeases(), [
      { holder: 'container-1', imageId: kept.id, chainIds: kept.layers.map((l) => l.chainId) },
      { holder: 'container-2', imageId: '', chainIds: [] },
    ]);
    assert.equal(await store.removeImage('kept:1'), 'removed');
    assert.equal(await store.removeImage('dropped:1'), 'removed');
    await store.gc();
    assert.deepEqual(snapshotNames(root), kept.layers.map((l) => hex(l.chainId)), 'only the leased snapshot is left');
  } finally {
    await reader.close();
    await store.close();
  }
});
