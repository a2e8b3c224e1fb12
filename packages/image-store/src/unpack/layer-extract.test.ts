import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { chmodSync, chownSync, lchownSync, linkSync, lstatSync, mkdirSync, readFileSync, readdirSync, readlinkSync, existsSync, symlinkSync, utimesSync, lutimesSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { buildTar } from '../testing/tar-builder.js';
import { addTestImage, layerFixture, opener, quietLogger, tarDirectory, tempDir } from '../testing/fixtures.js';
import { ImageStore } from '../image-store.js';
import { chainIds } from '../chain-id.js';
import { StoreError } from '../errors.js';
import { unpackLayer } from './unpack-layer.js';

async function unpackInto(tar: Buffer, compression: 'gzip' | 'zstd' | 'none' = 'none'): Promise<string> {
  const fixture = layerFixture(tar, compression);
  const dir = tempDir('unpack');
  const fsDir = join(dir, 'fs');
  mkdirSync(fsDir);
  const result = await unpackLayer({
    source: Readable.from([fixture.blob]),
    expectedSize: fixture.blob.length,
    fsDir,
    lowerDirs: async () => [],
    layerDigest: fixture.desc.digest,
  });
  assert.equal(result.diffId, fixture.diffId);
  assert.equal(result.blobDigest, fixture.desc.digest);
  return fsDir;
}

/** getfattr's view of one path, as name → base64 value. */
function xattrsOf(path: string): Record<string, string> {
  const out = execFileSync('getfattr', ['-h', '-d', '-m', '-', '-e', 'base64', '--absolute-names', path]).toString();
  const result: Record<string, string> = {};
  for (const line of out.split('\n')) {
    const match = /^([^#=][^=]*)=0s(.*)$/.exec(line);
    if (match) result[match[1]!] = match[2]!;
  }
  return result;
}

function walk(root: string, relative = ''): string[] {
  const out: string[] = [];
  for (const name of readdirSync(join(root, relative))) {
    const path = relative ? `${relative}/${name}` : name;
    out.push(path);
    if (lstatSync(join(root, path)).isDirectory()) out.push(...walk(root, path));
  }
  return out.sort();
}

function buildMetadataTree(): string {
  const src = tempDir('src');
  mkdirSync(join(src, 'd'));
  writeFileSync(join(src, 'd', 'suid'), 'setuid binary');
  chownSync(join(src, 'd', 'suid'), 1234, 5678);
  chmodSync(join(src, 'd', 'suid'), 0o4755);
  utimesSync(join(src, 'd', 'suid'), 1_400_000_000, 1_400_000_000);
  writeFileSync(join(src, 'sgid'), 'setgid');
  chmodSync(join(src, 'sgid'), 0o2750);
  linkSync(join(src, 'd', 'suid'), join(src, 'hard'));
  symlinkSync('d/suid', join(src, 'link'));
  lchownSync(join(src, 'link'), 42, 43);
  lutimesSync(join(src, 'link'), 1_300_000_000, 1_300_000_000);
  execFileSync('mknod', ['-m', '0620', join(src, 'null'), 'c', '1', '3']);
  execFileSync('mknod', [join(src, 'loop'), 'b', '7', '0']);
  execFileSync('mknod', ['-m', '0640', join(src, 'fifo'), 'p']);
  chownSync(join(src, 'fifo'), 7, 8);
  writeFileSync(join(src, 'odd name\nwith newline'), 'odd');
  execFileSync('setfattr', ['-n', 'user.note', '-v', 'hello', join(src, 'odd name\nwith newline')]);
  execFileSync('setfattr', ['-n', 'trusted.blob', '-v', '0sAAH/gA==', join(src, 'sgid')]);
  execFileSync('setfattr', ['-n', 'user.dir', '-v', 'yes', join(src, 'd')]);
  mkdirSync(join(src, 'private'), 0o700);
  mkdirSync(join(src, 'sticky'));
  chmodSync(join(src, 'sticky'), 0o1777);
  utimesSync(join(src, 'sticky'), 1_200_000_000, 1_200_000_000);
  chownSync(join(src, 'd'), 1001, 1002);
  chmodSync(join(src, 'd'), 0o750);
  utimesSync(join(src, 'd'), 1_100_000_000, 1_100_000_000);
  chmodSync(src, 0o755);
  return src;
}

test('every entry type keeps its type, owner, mode, times, xattrs and links', async () => {
  const src = buildMetadataTree();
  for (const compression of ['none', 'gzip', 'zstd'] as const) {
    const fsDir = await unpackInto(tarDirectory(src), compression);
    assert.deepEqual(walk(fsDir), walk(src), `${compression}: same names`);
    for (const path of walk(src)) {
      const want = lstatSync(join(src, path));
      const got = lstatSync(join(fsDir, path));
      const what = `${compression}: ${JSON.stringify(path)}`;
      assert.equal(got.mode, want.mode, `${what} mode ${got.mode.toString(8)} vs ${want.mode.toString(8)}`);
      assert.equal(got.uid, want.uid, `${what} uid`);
      assert.equal(got.gid, want.gid, `${what} gid`);
      assert.equal(got.rdev, want.rdev, `${what} rdev`);
      assert.equal(Math.floor(got.mtimeMs / 1000), Math.floor(want.mtimeMs / 1000), `${what} mtime`);
      if (want.isFile()) assert.deepEqual(readFileSync(join(fsDir, path)), readFileSync(join(src, path)), `${what} content`);
      if (want.isSymbolicLink()) assert.equal(readlinkSync(join(fsDir, path)), readlinkSync(join(src, path)), `${what} target`);
      assert.deepEqual(xattrsOf(join(fsDir, path)), xattrsOf(join(src, path)), `${what} xattrs`);
    }
    assert.equal(lstatSync(join(fsDir, 'hard')).ino, lstatSync(join(fsDir, 'd', 'suid')).ino, 'hard link shares the inode');
    assert.equal(lstatSync(join(fsDir, 'hard')).nlink, 2);
    assert.equal(lstatSync(fsDir).mode & 0o7777, 0o755, 'root entry metadata applied');
  }
});

test('layer-supplied overlay xattrs are not applied', async () => {
  const fsDir = await unpackInto(
    buildTar([
      { name: 'dir/', type: '5', pax: { 'SCHILY.xattr.trusted.overlay.redirect': '/etc', 'SCHILY.xattr.trusted.overlay.opaque': 'y', 'SCHILY.xattr.user.kept': 'k' } },
    ]),
  );
  assert.deepEqual(xattrsOf(join(fsDir, 'dir')), { 'user.kept': Buffer.from('k').toString('base64') });
});

test('directories missing from the archive are created; duplicate entries replace earlier ones', async () => {
  const fsDir = await unpackInto(
    buildTar([
      { name: 'a/b/c/file', data: 'deep' },
      { name: 'x', data: 'first' },
      { name: 'x', data: 'second' },
      { name: 'y/', type: '5' },
      { name: 'y/inner', data: 'gone' },
      { name: 'y', data: 'now a file' },
      { name: 'v7dir/', type: '0' },
    ]),
  );
  assert.equal(readFileSync(join(fsDir, 'a/b/c/file'), 'utf8'), 'deep');
  assert.equal(readFileSync(join(fsDir, 'x'), 'utf8'), 'second');
  assert.equal(readFileSync(join(fsDir, 'y'), 'utf8'), 'now a file');
  assert.ok(lstatSync(join(fsDir, 'v7dir')).isDirectory());
});

const lowerLayer = buildTar([
  { name: 'a/', type: '5' },
  { name: 'a/gone', data: 'deleted above' },
  { name: 'a/keep', data: 'kept' },
  { name: 'opq/', type: '5' },
  { name: 'opq/old', data: 'hidden by opaque' },
  { name: 'opq/sub/', type: '5' },
  { name: 'opq/sub/older', data: 'hidden too' },
  { name: 'dirgone/', type: '5' },
  { name: 'dirgone/x', data: 'x' },
  { name: 'redo/', type: '5' },
  { name: 'redo/old', data: 'hidden by recreate' },
]);

const upperLayer = buildTar([
  { name: 'a/', type: '5' },
  { name: 'a/.wh.gone' },
  { name: 'opq/', type: '5' },
  { name: 'opq/new', data: 'new' },
  { name: 'opq/.wh..wh..opq' },
  { name: '.wh.dirgone' },
  { name: '.wh.redo' },
  { name: 'redo/', type: '5' },
  { name: 'redo/fresh', data: 'fresh' },
  { name: '.wh..wh.plnk/', type: '5' },
  { name: '.wh..wh.plnk/123', data: 'aufs bookkeeping' },
]);

test('whiteouts and opaque markers become overlayfs whiteouts, and a real overlay mount honours them', async () => {
  const lower = await unpackInto(lowerLayer, 'gzip');
  const upper = await unpackInto(upperLayer, 'gzip');

  for (const name of ['a/gone', 'dirgone']) {
    const stats = lstatSync(join(upper, name));
    assert.ok(stats.isCharacterDevice() && stats.rdev === 0, `${name} is a 0/0 whiteout`);
  }
  assert.deepEqual(xattrsOf(join(upper, 'opq')), { 'trusted.overlay.opaque': Buffer.from('y').toString('base64') });
  assert.deepEqual(xattrsOf(join(upper, 'redo')), { 'trusted.overlay.opaque': Buffer.from('y').toString('base64') }, 'whited-out then recreated dir is opaque');
  assert.deepEqual(xattrsOf(join(upper, 'a')), {}, 'a plain dir is not opaque');
  assert.ok(!walk(upper).some((p) => p.split('/').some((c) => c.startsWith('.wh.'))), 'no .wh. names remain');

  const mountpoint = tempDir('merged');
  execFileSync('mount', ['-t', 'overlay', 'overlay', '-o', `lowerdir=${upper}:${lower}`, mountpoint]);
  try {
    assert.deepEqual(walk(mountpoint), ['a', 'a/keep', 'opq', 'opq/new', 'redo', 'redo/fresh']);
    assert.equal(readFileSync(join(mountpoint, 'a/keep'), 'utf8'), 'kept');
  } finally {
    execFileSync('umount', [mountpoint]);
  }
});

test('a hard link to a file in a lower layer copies that file up and links to the copy', async () => {
  const root = tempDir('store-hardlink');
  const store = await ImageStore.open(root, { logger: quietLogger(), writer: true });
  try {
    const lower = layerFixture(
      buildTar([
        { name: 'bin/', type: '5', mode: 0o751, uid: 3 },
        { name: 'bin/tool', data: 'tool body', mode: 0o4711, uid: 5, gid: 6, mtime: 1_234_567_890, pax: { 'SCHILY.xattr.user.tag': 'lower' } },
      ]),
    );
    const upper = layerFixture(buildTar([{ name: 'usr/', type: '5' }, { name: 'usr/alias', type: '1', linkname: 'bin/tool' }]));
    const image = await addTestImage(store, [lower, upper], { tags: ['hardlink:test'] });
    const [upperFs, lowerFs] = store.snapshotDirs(image);
    const copy = lstatSync(join(upperFs!, 'bin/tool'));
    const alias = lstatSync(join(upperFs!, 'usr/alias'));
    assert.equal(copy.ino, alias.ino);
    assert.equal(copy.nlink, 2);
    assert.equal(readFileSync(join(upperFs!, 'usr/alias'), 'utf8'), 'tool body');
    assert.equal(copy.mode & 0o7777, 0o4711);
    assert.equal(copy.uid, 5);
    assert.equal(copy.gid, 6);
    assert.equal(copy.mtimeMs, 1_234_567_890_000);
    assert.equal(lstatSync(join(upperFs!, 'bin')).mode & 0o7777, 0o751, 'copied-up parent keeps its mode');
    assert.deepEqual(xattrsOf(join(upperFs!, 'bin/tool')), { 'user.tag': Buffer.from('lower').toString('base64') });
    assert.equal(lstatSync(join(lowerFs!, 'bin/tool')).nlink, 1, 'the lower layer is untouched');

    const missing = layerFixture(buildTar([{ name: 'dangling', type: '1', linkname: 'bin/nothing' }]));
    const chains = chainIds([lower.diffId, missing.diffId]);
    await assert.rejects(
      store.ingestLayer({ desc: missing.desc, diffId: missing.diffId, chainId: chains[1]! }, opener(missing.blob).open),
      (err: unknown) => err instanceof StoreError && err.kind === 'bad-layer' && /bin\/nothing/.test(err.message),
    );
    assert.ok(!existsSync(join(root, 'snapshots', chains[1]!.slice(7))));
  } finally {
    await store.close();
  }
});

test('a hard link into a lower layer still being unpacked waits for it', async () => {
  const root = tempDir('store-hardlink-concurrent');
  const store = await ImageStore.open(root, { logger: quietLogger(), writer: true });
  try {
    const lower = layerFixture(buildTar([{ name: 'lib/', type: '5' }, { name: 'lib/libc.so', data: Buffer.alloc(300 * 1024, 9) }]));
    const upper = layerFixture(buildTar([{ name: 'lib/libc.so.6', type: '1', linkname: 'lib/libc.so' }]));
    const chains = chainIds([lower.diffId, upper.diffId]);
    const slowLower = async (): Promise<Readable> =>
      Readable.from(
        (async function* () {
          for (let i = 0; i < lower.blob.length; i += 8 * 1024) {
            await new Promise((resolve) => setTimeout(resolve, 2));
            yield lower.blob.subarray(i, i + 8 * 1024);
          }
        })(),
        { objectMode: false },
      );
    await Promise.all([
      store.ingestLayer({ desc: lower.desc, diffId: lower.diffId, chainId: chains[0]! }, slowLower),
      store.ingestLayer({ desc: upper.desc, diffId: upper.diffId, chainId: chains[1]! }, opener(upper.blob).open),
    ]);
    const upperFs = join(root, 'snapshots', chains[1]!.slice(7), 'fs');
    assert.equal(lstatSync(join(upperFs, 'lib/libc.so.6')).ino, lstatSync(join(upperFs, 'lib/libc.so')).ino);
    assert.equal(readFileSync(join(upperFs, 'lib/libc.so.6')).length, 300 * 1024);
  } finally {
    await store.close();
  }
});
