import { execFile } from 'node:child_process';
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { PassThrough, Readable } from 'node:stream';
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { promisify } from 'node:util';
import { tarChunks, TarWriter, type TarEntry } from './tar-writer.js';
import { makeTempDir, removeDir } from './tmp.js';

const run = promisify(execFile);

async function collect(entries: TarEntry[]): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const chunk of tarChunks(entries)) chunks.push(chunk);
  return Buffer.concat(chunks);
}

/** GNU tar's verbose listing, one line per member. */
async function listWithGnuTar(archive: Buffer): Promise<string[]> {
  const dir = await makeTempDir('skiff-tar-list');
  try {
    const path = join(dir, 'archive.tar');
    await writeFile(path, archive);
    const { stdout } = await run('tar', ['--list', '--verbose', '--verbose', '--numeric-owner', '--xattrs', '--xattrs-include=*', '-f', path]);
    // Drop the "<mode><xattr marker>" column gap so patterns can use single spaces.
    return stdout.trim().split('\n').map((line) => line.replace(/^(\S{10})[ *] /, '$1 '));
  } finally {
    await removeDir(dir);
  }
}

test('writes every entry type with modes, owners and link targets', async () => {
  const archive = await collect([
    { type: 'dir', name: 'd', mode: 0o1777 },
    { type: 'file', name: 'd/f', content: 'hello\n', mode: 0o4755, uid: 1234, gid: 1234 },
    { type: 'symlink', name: 'd/s', target: '../etc/passwd' },
    { type: 'hardlink', name: 'd/h', target: 'd/f' },
    { type: 'char', name: 'null', major: 1, minor: 3, mode: 0o666 },
    { type: 'block', name: 'loop', major: 7, minor: 0 },
    { type: 'fifo', name: 'pipe' },
  ]);
  assert.equal(archive.length % 512, 0);
  const lines = await listWithGnuTar(archive);
  assert.match(lines[0]!, /^drwxrwxrwt 0\/0 .* d\/$/);
  assert.match(lines[1]!, /^-rwsr-xr-x 1234\/1234 +6 .* d\/f$/);
  assert.match(lines[2]!, /^lrwxrwxrwx .* d\/s -> \.\.\/etc\/passwd$/);
  assert.match(lines[3]!, /^hrw-r--r-- .* d\/h link to d\/f$/);
  assert.match(lines[4]!, /^crw-rw-rw- 0\/0 +1,3 .* null$/);
  assert.match(lines[5]!, /^brw-rw---- 0\/0 +7,0 .* loop$/);
  assert.match(lines[6]!, /^prw-r--r-- .* pipe$/);
});

test('keeps hostile names verbatim and uses PAX for what ustar cannot hold', async () => {
  const longName = `${'deep/'.repeat(40)}file`;
  const longTarget = `/${'t'.repeat(150)}`;
  const archive = await collect([
    { type: 'file', name: '../escape', content: 'x' },
    { type: 'file', name: '/abs/path', content: 'x' },
    { type: 'symlink', name: 'link', target: '/etc' },
    { type: 'file', name: 'link/passwd', content: 'x' },
    { type: 'file', name: longName, content: 'long' },
    { type: 'symlink', name: 'long-link', target: longTarget },
    { type: 'file', name: 'ünïcode', content: 'u', uid: 3_000_000, gid: 4_000_000 },
    { type: 'file', name: 'with-xattr', content: 'x', xattrs: { 'user.skiff': 'test' } },
  ]);
  const text = archive.toString('latin1');
  assert.match(text, /\d+ path=deep\/deep\//);
  assert.match(text, /\d+ linkpath=\/t{150}\n/);
  assert.match(text, /\d+ uid=3000000\n/);
  assert.match(text, /\d+ SCHILY\.xattr\.user\.skiff=test\n/);
  const lines = await listWithGnuTar(archive);
  const names = lines.filter((l) => !l.startsWith('  ')).map((l) => l.split(/ +/).slice(5).join(' '));
  assert.ok(lines.some((l) => l.startsWith('  x:') && l.includes('user.skiff')));
  assert.deepEqual(names, [
    '../escape',
    '/abs/path',
    'link -> /etc',
    'link/passwd',
    longName,
    `long-link -> ${longTarget}`,
    'ünïcode',
    'with-xattr',
  ]);
  assert.ok(lines.some((l) => l.startsWith('-rw-r--r-- 3000000/4000000 ')));
});

test('streams sized sources and rejects a size mismatch', async () => {
  const dir = await makeTempDir('skiff-tar-src');
  try {
    const source = join(dir, 'src');
    await writeFile(source, Buffer.alloc(70_000, 7));
    const out = new PassThrough();
    const chunks: Buffer[] = [];
    out.on('data', (chunk: Buffer) => chunks.push(chunk));
    const writer = new TarWriter(out);
    await writer.add({ type: 'file', name: 'from-path', content: { path: source } });
    await writer.add({ type: 'file', name: 'from-stream', content: { size: 3, open: () => Readable.from([Buffer.from('abc')]) } });
    await writer.finish();
    const archive = Buffer.concat(chunks);
    assert.equal(archive.length, 512 + 70_144 + 512 + 512 + 1024);
    assert.deepEqual(archive.subarray(512, 512 + 70_000), await readFile(source));

    await assert.rejects(
      collect([{ type: 'file', name: 'short', content: { size: 10, open: () => Readable.from([Buffer.from('abc')]) } }]),
      /content is 3 bytes, declared 10/,
    );
  } finally {
    await removeDir(dir);
  }
});
