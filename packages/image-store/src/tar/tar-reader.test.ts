import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdirSync, writeFileSync, symlinkSync, linkSync, truncateSync, openSync, writeSync, closeSync } from 'node:fs';
import { join } from 'node:path';
import { buildTar } from '../testing/tar-builder.js';
import { tempDir } from '../testing/fixtures.js';
import { readTar, type TarEntry } from './tar-reader.js';
import { TarFormatError } from './tar-header.js';

interface Read {
  entries: Array<TarEntry & { data: Buffer }>;
  bytesSeen: number;
}

/** Parses an in-memory archive delivered in awkward chunk sizes. */
async function parse(archive: Buffer, chunkSize = 333): Promise<Read> {
  async function* chunks(): AsyncGenerator<Buffer> {
    for (let i = 0; i < archive.length; i += chunkSize) yield archive.subarray(i, i + chunkSize);
  }
  const entries: Read['entries'] = [];
  let bytesSeen = 0;
  await readTar(
    chunks(),
    async (entry, content) => {
      const parts: Buffer[] = [];
      for await (const part of content) parts.push(Buffer.from(part));
      entries.push({ ...entry, data: Buffer.concat(parts) });
    },
    {
      onChunk: (chunk) => {
        bytesSeen += chunk.length;
      },
    },
  );
  return { entries, bytesSeen };
}

test('reads GNU tar output in both formats, with long names and every entry type', async () => {
  const dir = tempDir('tar-src');
  const longDir = join(dir, 'd'.repeat(120));
  mkdirSync(longDir);
  writeFileSync(join(longDir, `${'f'.repeat(150)}.txt`), 'long');
  writeFileSync(join(dir, 'small'), 'hello');
  symlinkSync('x'.repeat(130), join(dir, 'longlink'));
  linkSync(join(dir, 'small'), join(dir, 'hard'));
  execFileSync('mknod', [join(dir, 'null'), 'c', '1', '3']);
  execFileSync('mknod', [join(dir, 'fifo'), 'p']);
  for (const format of ['gnu', 'pax'] as const) {
    const archive = execFileSync('tar', [`--format=${format}`, '-C', dir, '-c', '.']);
    const { entries, bytesSeen } = await parse(archive);
    assert.equal(bytesSeen, archive.length, 'every byte, including the padding after the end marker, is seen');
    const byName = new Map(entries.map((e) => [e.path.replace(/^\.\//, '').replace(/\/$/, ''), e]));
    const long = byName.get(`${'d'.repeat(120)}/${'f'.repeat(150)}.txt`);
    assert.ok(long, `${format}: long name survives`);
    assert.equal(long.data.toString(), 'long');
    assert.equal(byName.get('longlink')?.type, 'symlink');
    assert.equal(byName.get('longlink')?.linkTarget, 'x'.repeat(130));
    assert.equal(byName.get('null')?.type, 'char-device');
    assert.equal(byName.get('null')?.devMajor, 1);
    assert.equal(byName.get('null')?.devMinor, 3);
    assert.equal(byName.get('fifo')?.type, 'fifo');
    const links = [byName.get('small')!, byName.get('hard')!];
    assert.equal(links.filter((e) => e.type === 'hardlink').length, 1);
    assert.equal(links.find((e) => e.type === 'file')?.data.toString(), 'hello');
    assert.equal(byName.get('')?.type, 'directory');
  }
});

test('PAX per-entry and global records, xattrs, and base-256 numbers', async () => {
  const archive = buildTar(
    [
      { name: 'short', pax: { path: 'a/very/long/' + 'p'.repeat(200), mtime: '1700000000.5', 'SCHILY.xattr.user.bin': Buffer.from([0, 1, 2, 255]) }, data: 'x' },
      { name: 'big-ids', uid: 3_000_000, gid: 70_000_000, base256: true, data: 'y' },
      { name: 'plain' },
    ],
    { globalPax: { uid: '4242' } },
  );
  const { entries } = await parse(archive, 7);
  assert.equal(entries.length, 3);
  assert.equal(entries[0]!.path, 'a/very/long/' + 'p'.repeat(200));
  assert.equal(entries[0]!.mtime, 1700000000.5);
  assert.deepEqual(entries[0]!.xattrs.get('user.bin'), Buffer.from([0, 1, 2, 255]));
  assert.equal(entries[0]!.uid, 4242, 'global PAX uid applies');
  assert.equal(entries[1]!.uid, 4242, 'global PAX value wins over the header field');
  assert.equal(entries[1]!.gid, 70_000_000);
  assert.equal(entries[1]!.data.toString(), 'y');
  assert.equal(entries[2]!.uid, 4242);
});

test('base-256 values are decoded', async () => {
  const { entries } = await parse(buildTar([{ name: 'f', uid: 2_097_152 + 5, gid: 9, base256: true, data: 'z' }]));
  assert.equal(entries[0]!.uid, 2_097_157);
});

test('a corrupt header is a TarFormatError', async () => {
  const archive = buildTar([{ name: 'f', data: 'abc' }]);
  archive[10] = 0x41;
  await assert.rejects(parse(archive), (err: unknown) => err instanceof TarFormatError && /checksum/.test(err.message));
});

test('a truncated archive is a TarFormatError', async () => {
  const archive = buildTar([{ name: 'f', data: Buffer.alloc(4000, 1) }]);
  await assert.rejects(parse(archive.subarray(0, 1500)), (err: unknown) => err instanceof TarFormatError && /truncated/.test(err.message));
});

test('sparse files are refused as unsupported', async () => {
  const dir = tempDir('tar-sparse');
  const path = join(dir, 'sparse');
  const fd = openSync(path, 'w');
  writeSync(fd, 'head');
  closeSync(fd);
  truncateSync(path, 64 * 1024 * 1024);
  for (const format of ['gnu', 'pax'] as const) {
    const archive = execFileSync('tar', [`--format=${format}`, '--sparse', '-C', dir, '-c', 'sparse'], { maxBuffer: 128 * 1024 * 1024 });
    await assert.rejects(parse(archive, 4096), (err: unknown) => err instanceof TarFormatError && err.reason === 'unsupported' && /sparse/.test(err.message), format);
  }
});

test('unknown type flags are refused', async () => {
  await assert.rejects(parse(buildTar([{ name: 'odd', type: 'Q' }])), /unknown tar type flag/);
});
