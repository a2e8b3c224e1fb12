import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { closeSync, existsSync, lstatSync, mkdirSync, openSync, readFileSync, readdirSync, readlinkSync } from 'node:fs';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { setTimeout as sleep } from 'node:timers/promises';
import { randomBytes } from 'node:crypto';
import { ImageStore } from './image-store.js';
import { StoreError, type StoreErrorKind } from './errors.js';
import { chainIds } from './chain-id.js';
import { buildTar, type TarSpec } from './testing/tar-builder.js';
import { layerFixture, opener, quietLogger, sha256, simpleLayer, tempDir, type LayerFixture } from './testing/fixtures.js';

async function withStore(body: (store: ImageStore, root: string) => Promise<void>): Promise<void> {
  const root = tempDir('ingest');
  const store = await ImageStore.open(root, { logger: quietLogger(), writer: true });
  try {
    await body(store, root);
  } finally {
    await store.close();
  }
}

function asBase(layer: LayerFixture): { desc: LayerFixture['desc']; diffId: string; chainId: string } {
  return { desc: layer.desc, diffId: layer.diffId, chainId: layer.diffId };
}

/** Nothing of a failed ingest may remain: no temp dir, no snapshot, no blob. */
function assertNothingLeft(root: string, layer: LayerFixture, committedSnapshots: string[] = []): void {
  assert.deepEqual(readdirSync(join(root, 'snapshots')).sort(), committedSnapshots.sort(), 'snapshots/ holds no temp dir or new snapshot');
  assert.deepEqual(readdirSync(join(root, 'ingest')), [], 'ingest/ is empty');
  assert.ok(!existsSync(join(root, 'blobs', 'sha256', layer.desc.digest.slice(7))), 'blob not committed');
}

function isStoreError(kind: StoreErrorKind, pattern?: RegExp): (err: unknown) => boolean {
  return (err: unknown) => {
    assert.ok(err instanceof StoreError, `expected StoreError, got ${String(err)}`);
    assert.equal(err.kind, kind, err.message);
    if (pattern) assert.match(err.message, pattern);
    return true;
  };
}

test('gzip, zstd and plain layers unpack and record meta.json', async () => {
  await withStore(async (store, root) => {
    for (const compression of ['gzip', 'zstd', 'none'] as const) {
      const layer = simpleLayer(`content for ${compression}`, compression);
      await store.ingestLayer(asBase(layer), opener(layer.blob).open);
      const dir = join(root, 'snapshots', layer.diffId.slice(7));
      const meta = JSON.parse(readFileSync(join(dir, 'meta.json'), 'utf8'));
      assert.deepEqual(meta, { diffId: layer.diffId, chainId: layer.diffId, size: `content for ${compression}`.length, inodes: 3, blobDigests: [layer.desc.digest], standsAlone: true });
      assert.ok(!existsSync(join(root, 'blobs', 'sha256', layer.desc.digest.slice(7))), 'the compressed blob is not kept');
    }
    assert.deepEqual(readdirSync(join(root, 'ingest')), []);
  });
});

test('unknown layer media types are refused before downloading', async () => {
  await withStore(async (store) => {
    const layer = simpleLayer('x');
    const source = opener(layer.blob);
    await assert.rejects(
      store.ingestLayer({ ...asBase(layer), desc: { ...layer.desc, mediaType: 'application/vnd.example.layer.squashfs' } }, source.open),
      isStoreError('unsupported', /application\/vnd\.example\.layer\.squashfs/),
    );
    assert.equal(source.calls(), 0);
  });
});

test('digest, size and diff ID mismatches fail and leave nothing behind', async () => {
  await withStore(async (store, root) => {
    const layer = simpleLayer('verify me');
    const cases: Array<{ name: string; ingest: Parameters<ImageStore['ingestLayer']>[0]; kind: StoreErrorKind; pattern: RegExp }> = [
      { name: 'digest', ingest: { ...asBase(layer), desc: { ...layer.desc, digest: sha256('other') } }, kind: 'digest-mismatch', pattern: /expected digest/ },
      { name: 'size too small', ingest: { ...asBase(layer), desc: { ...layer.desc, size: layer.desc.size - 1 } }, kind: 'size-mismatch', pattern: /expected \d+ bytes/ },
      { name: 'size too large', ingest: { ...asBase(layer), desc: { ...layer.desc, size: layer.desc.size + 1 } }, kind: 'size-mismatch', pattern: /expected \d+ bytes, got \d+/ },
      { name: 'diff ID', ingest: { ...asBase(layer), diffId: sha256('not the tar'), chainId: sha256('not the tar') }, kind: 'digest-mismatch', pattern: /diff ID/ },
    ];
    for (const c of cases) {
      await assert.rejects(store.ingestLayer(c.ingest, opener(layer.blob).open), isStoreError(c.kind, c.pattern), c.name);
      assertNothingLeft(root, layer);
    }
  });
});

test('a layer of several pieces unpacks, and its digest and diff ID are verified before anything is kept', async () => {
  await withStore(async (store, root) => {
    const data = randomBytes(9 * 1024 * 1024);
    const layer = layerFixture(buildTar([{ name: 'big.bin', data }]));
    const refused: Array<{ ingest: Parameters<ImageStore['ingestLayer']>[0]; pattern: RegExp }> = [
      { ingest: { ...asBase(layer), desc: { ...layer.desc, digest: sha256('other') } }, pattern: /expected digest/ },
      { ingest: { ...asBase(layer), diffId: sha256('not the tar'), chainId: sha256('not the tar') }, pattern: /diff ID/ },
    ];
    for (const c of refused) {
      await assert.rejects(store.ingestLayer(c.ingest, opener(layer.blob).open), isStoreError('digest-mismatch', c.pattern));
      assertNothingLeft(root, layer);
    }
    await store.ingestLayer(asBase(layer), opener(layer.blob).open);
    assert.ok(readFileSync(join(root, 'snapshots', layer.diffId.slice(7), 'fs', 'big.bin')).equals(data));
    assert.deepEqual(readdirSync(join(root, 'blobs', 'sha256')), [], 'the compressed blob is not kept');
    assert.deepEqual(readdirSync(join(root, 'ingest')), []);
  });
});

test('a file write still waiting for a free-space check when the ingest is aborted never reaches another file', async () => {
  const root = tempDir('ingest');
  let calls = 0;
  let release: () => void = () => undefined;
  const gate = new Promise<void>((resolve) => (release = resolve));
  // The first check (before the layer starts) answers at once; the one due after 8 MiB waits.
  const freeBytes = async (): Promise<number> => {
    if (calls++ > 0) await gate;
    return 1024 ** 4;
  };
  const store = await ImageStore.open(root, { logger: quietLogger(), writer: true, freeBytes });
  try {
    const layer = layerFixture(buildTar([{ name: 'big.bin', data: randomBytes(12 * 1024 * 1024) }]));
    const aborter = new AbortController();
    const ingest = store.ingestLayer(asBase(layer), opener(layer.blob).open, { signal: aborter.signal });
    while (calls < 2) await sleep(5);
    aborter.abort(new Error('pull cancelled'));
    ingest.catch(() => undefined);
    await sleep(100);
    // Opened now, this file takes the lowest free descriptor: an unpacked file's, had it been closed.
    const other = join(root, 'other');
    const fd = openSync(other, 'wx', 0o600);
    try {
      release();
      await assert.rejects(ingest);
      for (const deadline = Date.now() + 20_000; Date.now() < deadline && readdirSync(join(root, 'snapshots')).length > 0; ) await sleep(10);
      await sleep(50);
      assert.equal(readFileSync(other).length, 0, 'nothing of the layer was written to it');
    } finally {
      closeSync(fd);
    }
    assertNothingLeft(root, layer);
  } finally {
    release();
    await store.close();
  }
});

test('a corrupt compressed stream and a failing download leave nothing behind', async () => {
  await withStore(async (store, root) => {
    const layer = simpleLayer('corrupt me');
    const corrupt = Buffer.from(layer.blob);
    corrupt[corrupt.length - 12] ^= 0xff;
    const corruptLayer: LayerFixture = { ...layer, blob: corrupt, desc: { ...layer.desc, digest: sha256(corrupt) } };
    await assert.rejects(store.ingestLayer(asBase(corruptLayer), opener(corrupt).open), isStoreError('bad-layer'));
    assertNothingLeft(root, corruptLayer);

    const failing = async (): Promise<Readable> => {
      let sent = false;
      return new Readable({
        read() {
          if (sent) return void this.destroy(new Error('connection reset by peer'));
          sent = true;
          this.push(layer.blob.subarray(0, 20));
        },
      });
    };
    await assert.rejects(store.ingestLayer(asBase(layer), failing), isStoreError('bad-layer', /connection reset by peer/));
    assertNothingLeft(root, layer);

    const zstdLayer = simpleLayer('zstd corrupt', 'zstd');
    const badZstd = Buffer.concat([zstdLayer.blob.subarray(0, 8), Buffer.alloc(64, 0x55)]);
    const badZstdLayer: LayerFixture = { ...zstdLayer, blob: badZstd, desc: { ...zstdLayer.desc, digest: sha256(badZstd), size: badZstd.length } };
    await assert.rejects(store.ingestLayer(asBase(badZstdLayer), opener(badZstd).open), isStoreError('bad-layer'));
    assertNothingLeft(root, badZstdLayer);
  });
});

const traversalCases: Array<{ name: string; entries: TarSpec[]; entry: string }> = [
  { name: 'dot-dot', entries: [{ name: 'ok', data: 'fine' }, { name: '../escaped', data: 'x' }], entry: '../escaped' },
  { name: 'nested dot-dot', entries: [{ name: 'a/../../escaped', data: 'x' }], entry: 'a/../../escaped' },
  { name: 'absolute', entries: [{ name: '/abs/escaped', data: 'x' }], entry: '/abs/escaped' },
  { name: 'symlink parent (absolute)', entries: [{ name: 'evil', type: '2', linkname: '@OUTSIDE@' }, { name: 'evil/escaped', data: 'x' }], entry: 'evil/escaped' },
  { name: 'symlink parent (relative)', entries: [{ name: 'up', type: '2', linkname: '..' }, { name: 'up/escaped', data: 'x' }], entry: 'up/escaped' },
  { name: 'file parent', entries: [{ name: 'plain', data: 'file' }, { name: 'plain/escaped', data: 'x' }], entry: 'plain/escaped' },
  { name: 'dir replaced by symlink', entries: [{ name: 'd/', type: '5' }, { name: 'd', type: '2', linkname: '@OUTSIDE@' }, { name: 'd/escaped', data: 'x' }], entry: 'd/escaped' },
  { name: 'hard link to dot-dot', entries: [{ name: 'h', type: '1', linkname: '../../etc/passwd' }], entry: 'h' },
  { name: 'hard link to absolute', entries: [{ name: 'h', type: '1', linkname: '/etc/passwd' }], entry: 'h' },
  { name: 'hard link through symlink', entries: [{ name: 'sl', type: '2', linkname: '/etc' }, { name: 'h', type: '1', linkname: 'sl/passwd' }], entry: 'h' },
  { name: 'whiteout of dot-dot', entries: [{ name: 'a/.wh...' }], entry: 'a/.wh...' },
];

for (const c of traversalCases) {
  test(`unsafe entry fails the layer and writes nothing anywhere: ${c.name}`, async () => {
    await withStore(async (store, root) => {
      const outside = tempDir('outside');
      mkdirSync(join(outside, 'abs'));
      const entries = c.entries.map((e) => (e.linkname === '@OUTSIDE@' ? { ...e, linkname: outside } : e));
      const layer = layerFixture(buildTar(entries));
      await assert.rejects(store.ingestLayer(asBase(layer), opener(layer.blob).open), isStoreError('unsafe-path', new RegExp(c.entry.replace(/[.*+?^${}()|[\]\\]/g, '\\$&'))));
      assertNothingLeft(root, layer);
      assert.deepEqual(readdirSync(outside), ['abs']);
      assert.deepEqual(readdirSync(join(outside, 'abs')), []);
      assert.ok(!existsSync(join(root, 'escaped')) && !existsSync(join(root, 'snapshots', 'escaped')));
    });
  });
}

test('a hard link into a lower layer through a lower symlink is refused', async () => {
  await withStore(async (store, root) => {
    const lower = layerFixture(buildTar([{ name: 'etc', type: '2', linkname: '/etc' }]));
    await store.ingestLayer(asBase(lower), opener(lower.blob).open);
    const upper = layerFixture(buildTar([{ name: 'h', type: '1', linkname: 'etc/passwd' }]));
    const chainId = chainIds([lower.diffId, upper.diffId])[1]!;
    await assert.rejects(store.ingestLayer({ desc: upper.desc, diffId: upper.diffId, chainId }, opener(upper.blob).open), isStoreError('unsafe-path', /etc\/passwd/));
    assertNothingLeft(root, upper, [lower.diffId.slice(7)]);
  });
});

/** Serves the blob slowly in pieces, counting opens. */
function slowOpener(data: Buffer, pieces = 8, delayMs = 15): { open: () => Promise<Readable>; calls: () => number } {
  let calls = 0;
  return {
    open: async () => {
      calls++;
      const size = Math.ceil(data.length / pieces);
      return Readable.from(
        (async function* () {
          for (let i = 0; i < data.length; i += size) {
            await sleep(delayMs);
            yield data.subarray(i, i + size);
          }
        })(),
        { objectMode: false },
      );
    },
    calls: () => calls,
  };
}

test('concurrent ingests of one chain ID download and unpack once', async () => {
  await withStore(async (store, root) => {
    const layer = layerFixture(buildTar(Array.from({ length: 50 }, (_, i) => ({ name: `f${i}`, data: `file ${i}`.repeat(100) }))));
    const source = slowOpener(layer.blob);
    await Promise.all(Array.from({ length: 5 }, () => store.ingestLayer(asBase(layer), source.open)));
    assert.equal(source.calls(), 1);
    assert.ok(existsSync(join(root, 'snapshots', layer.diffId.slice(7), 'fs', 'f49')));
    await store.ingestLayer(asBase(layer), source.open);
    assert.equal(source.calls(), 1, 'an existing snapshot is not fetched again');
  });
});

test('a layer already unpacked is not downloaded again, under any image and from any of its blobs', async () => {
  await withStore(async (store, root) => {
    const gz = simpleLayer('unpacked once', 'gzip');
    const zst = layerFixture(gz.tar, 'zstd');
    await store.ingestLayer(asBase(gz), opener(gz.blob).open);
    const mustNotDownload = async (): Promise<Readable> => {
      throw new Error('must not download');
    };
    // Another image naming the same blob, and one naming a zstd build of the same layer.
    await store.ingestLayer(asBase(gz), mustNotDownload);
    await store.ingestLayer(asBase(zst), mustNotDownload);
    const meta = JSON.parse(readFileSync(join(root, 'snapshots', gz.diffId.slice(7), 'meta.json'), 'utf8'));
    assert.deepEqual(meta.blobDigests, [gz.desc.digest], 'the snapshot records the blob it was verified against');
    assert.deepEqual(readdirSync(join(root, 'blobs', 'sha256')), []);
  });
});

test('unpacking runs while the download is still in progress', async () => {
  await withStore(async (store, root) => {
    const first = Buffer.alloc(256 * 1024, 'a');
    const layer = layerFixture(buildTar([{ name: 'first', data: first }, { name: 'second', data: Buffer.alloc(256 * 1024, 'b') }]), 'none');
    let sawFirstBeforeEnd = false;
    const open = async (): Promise<Readable> =>
      Readable.from(
        (async function* () {
          yield layer.blob.subarray(0, 300 * 1024);
          // Hold the rest back until the first file shows up in the unpack dir.
          for (const deadline = Date.now() + 20_000; Date.now() < deadline && !sawFirstBeforeEnd; ) {
            await sleep(10);
            for (const name of readdirSync(join(root, 'snapshots'))) {
              if (name.startsWith('.tmp-') && existsSync(join(root, 'snapshots', name, 'fs', 'first'))) sawFirstBeforeEnd = true;
            }
          }
          yield layer.blob.subarray(300 * 1024);
        })(),
        { objectMode: false },
      );
    await store.ingestLayer(asBase(layer), open);
    assert.ok(sawFirstBeforeEnd, 'the first file was written before the download finished');
  });
});

function endlessOpener(data: Buffer): () => Promise<Readable> {
  return async () =>
    new Readable({
      read() {
        // Sends the start, then stalls like a hung connection.
        if (!(this as Readable & { sent?: boolean }).sent) {
          (this as Readable & { sent?: boolean }).sent = true;
          this.push(data.subarray(0, Math.min(1024, data.length - 1)));
        }
      },
    });
}

test('aborting an ingest cleans up; a shared ingest continues while any caller still waits', async () => {
  await withStore(async (store, root) => {
    const layer = layerFixture(buildTar([{ name: 'big', data: Buffer.alloc(64 * 1024, 7) }]));
    const controller = new AbortController();
    const pending = store.ingestLayer(asBase(layer), endlessOpener(layer.blob), { signal: controller.signal });
    await sleep(50);
    controller.abort(new Error('pull cancelled'));
    await assert.rejects(pending, isStoreError('bad-layer', /aborted/));
    // Answered only once the aborted ingest has cleaned up.
    assertNothingLeft(root, layer);

    const shared = slowOpener(layer.blob, 8, 20);
    const quitter = new AbortController();
    const first = store.ingestLayer(asBase(layer), shared.open, { signal: quitter.signal });
    const second = store.ingestLayer(asBase(layer), shared.open);
    await sleep(30);
    quitter.abort(new Error('first caller gave up'));
    await assert.rejects(first, isStoreError('bad-layer', /aborted/));
    await second;
    assert.equal(shared.calls(), 1);
    assert.ok(existsSync(join(root, 'snapshots', layer.diffId.slice(7), 'meta.json')));
  });
});

test('gzip and zstd blobs of one layer share one download and one snapshot; neither blob is kept', async () => {
  await withStore(async (store, root) => {
    const gz = simpleLayer('same content', 'gzip');
    const zst = layerFixture(gz.tar, 'zstd');
    assert.equal(gz.diffId, zst.diffId);
    const gzSource = opener(gz.blob);
    const zstSource = opener(zst.blob);
    await Promise.all([store.ingestLayer(asBase(gz), gzSource.open), store.ingestLayer(asBase(zst), zstSource.open)]);
    assert.equal(gzSource.calls() + zstSource.calls(), 1, 'one download for the chain');
    assert.deepEqual(readdirSync(join(root, 'snapshots')), [gz.diffId.slice(7)]);
    assert.deepEqual(readdirSync(join(root, 'blobs', 'sha256')), []);
    assert.deepEqual(readdirSync(join(root, 'ingest')), []);
  });
});

test('a blob that decompresses to something else than its diff ID is refused and leaves nothing', async () => {
  await withStore(async (store, root) => {
    const expected = simpleLayer('expected content', 'gzip');
    const other = simpleLayer('different content', 'zstd');
    await assert.rejects(store.ingestLayer({ ...asBase(expected), desc: other.desc }, opener(other.blob).open), isStoreError('digest-mismatch', /diff ID/));
    assertNothingLeft(root, other);
  });
});

test('a layer unpacked under another parent is copied, not downloaded again, when its tree does not depend on the layers below', async () => {
  await withStore(async (store, root) => {
    const shared = layerFixture(
      buildTar([
        { name: 'app/', type: '5', mode: 0o750 },
        { name: 'app/run', data: 'the same layer', mode: 0o4755, uid: 12, gid: 34 },
        { name: 'app/alias', type: '1', linkname: 'app/run' },
        { name: 'app/link', type: '2', linkname: '/etc/passwd' },
        { name: 'etc/', type: '5' },
        { name: 'etc/.wh..wh..opq' },
        { name: '.wh.gone' },
      ]),
    );
    const [baseA, baseB] = [simpleLayer('base a'), simpleLayer('base b')];
    const chainsA = chainIds([baseA.diffId, shared.diffId]);
    const chainsB = chainIds([baseB.diffId, shared.diffId]);
    await store.ingestLayer(asBase(baseA), opener(baseA.blob).open);
    await store.ingestLayer({ desc: shared.desc, diffId: shared.diffId, chainId: chainsA[1]! }, opener(shared.blob).open);
    await store.ingestLayer(asBase(baseB), opener(baseB.blob).open);
    const source = opener(shared.blob);
    await store.ingestLayer({ desc: shared.desc, diffId: shared.diffId, chainId: chainsB[1]! }, source.open);
    assert.equal(source.calls(), 0, 'not downloaded again');

    const [a, b] = [chainsA[1]!, chainsB[1]!].map((chain) => join(root, 'snapshots', chain.slice(7), 'fs'));
    const run = lstatSync(join(b!, 'app', 'run'));
    assert.equal(readFileSync(join(b!, 'app', 'run'), 'utf8'), 'the same layer');
    assert.deepEqual([run.mode & 0o7777, run.uid, run.gid, run.nlink], [0o4755, 12, 34, 2]);
    assert.equal(lstatSync(join(b!, 'app', 'alias')).ino, run.ino, 'hard links stay hard links');
    assert.equal(readlinkSync(join(b!, 'app', 'link')), '/etc/passwd', 'symbolic links are copied, not followed');
    assert.equal(lstatSync(join(b!, 'app')).mode & 0o7777, 0o750);
    const gone = lstatSync(join(b!, 'gone'));
    assert.ok(gone.isCharacterDevice() && gone.rdev === 0, 'the whiteout is still one');
    assert.deepEqual(execFileSync('getfattr', ['--absolute-names', '--only-values', '-n', 'trusted.overlay.opaque', join(b!, 'etc')]).toString(), 'y');
    const metaA = JSON.parse(readFileSync(join(a!, '..', 'meta.json'), 'utf8'));
    const metaB = JSON.parse(readFileSync(join(b!, '..', 'meta.json'), 'utf8'));
    assert.deepEqual(metaB, { ...metaA, chainId: chainsB[1] });
    assert.equal(metaB.standsAlone, true);
  });
});

test('a layer that hard-links into the layers below is downloaded again under another parent', async () => {
  await withStore(async (store, root) => {
    const lowerA = layerFixture(buildTar([{ name: 'bin/', type: '5' }, { name: 'bin/tool', data: 'tool of a' }]));
    const lowerB = layerFixture(buildTar([{ name: 'bin/', type: '5' }, { name: 'bin/tool', data: 'tool of b' }]));
    const upper = layerFixture(buildTar([{ name: 'usr/', type: '5' }, { name: 'usr/alias', type: '1', linkname: 'bin/tool' }]));
    const chainsA = chainIds([lowerA.diffId, upper.diffId]);
    const chainsB = chainIds([lowerB.diffId, upper.diffId]);
    await store.ingestLayer(asBase(lowerA), opener(lowerA.blob).open);
    await store.ingestLayer({ desc: upper.desc, diffId: upper.diffId, chainId: chainsA[1]! }, opener(upper.blob).open);
    await store.ingestLayer(asBase(lowerB), opener(lowerB.blob).open);
    const source = opener(upper.blob);
    await store.ingestLayer({ desc: upper.desc, diffId: upper.diffId, chainId: chainsB[1]! }, source.open);
    assert.equal(source.calls(), 1, 'its tree depends on the layer below, so it is unpacked again');
    assert.equal(readFileSync(join(root, 'snapshots', chainsB[1]!.slice(7), 'fs', 'usr', 'alias'), 'utf8'), 'tool of b');
    assert.equal(JSON.parse(readFileSync(join(root, 'snapshots', chainsA[1]!.slice(7), 'meta.json'), 'utf8')).standsAlone, false);
  });
});
