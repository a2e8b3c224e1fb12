import assert from 'node:assert/strict';
import { mkdir, mkdtemp, readdir, rm, rmdir, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { CgroupFileHandles } from './cgroup-file-handles.js';

/** The descriptors this process holds open on files under `dir`. */
async function openUnder(dir: string): Promise<number> {
  const { readlink } = await import('node:fs/promises');
  let count = 0;
  for (const fd of await readdir('/proc/self/fd')) {
    const target = await readlink(join('/proc/self/fd', fd)).catch(() => '');
    if (target.startsWith(`${dir}/`)) count++;
  }
  return count;
}

test('a kept cgroup file is read anew each time, and closed once its cgroup is removed', async () => {
  const cgroup = join('/sys/fs/cgroup/memory', `skiff-file-handles-${process.pid}`);
  await mkdir(cgroup);
  const files = new CgroupFileHandles({ sweepEveryMs: 0 });
  try {
    await writeFile(join(cgroup, 'memory.limit_in_bytes'), String(64 * 1024 * 1024));
    assert.equal(files.read(cgroup, 'memory.limit_in_bytes')?.trim(), String(64 * 1024 * 1024));
    await writeFile(join(cgroup, 'memory.limit_in_bytes'), String(32 * 1024 * 1024));
    assert.equal(files.read(cgroup, 'memory.limit_in_bytes')?.trim(), String(32 * 1024 * 1024));
    assert.equal(files.size, 1);
    assert.equal(await openUnder(cgroup), 1);
    await rmdir(cgroup);
    assert.equal(files.read(cgroup, 'memory.limit_in_bytes'), undefined);
    assert.equal(files.size, 0);
    // Made again under the same path: its own files, not the removed one's.
    await mkdir(cgroup);
    await writeFile(join(cgroup, 'memory.limit_in_bytes'), String(16 * 1024 * 1024));
    assert.equal(files.read(cgroup, 'memory.limit_in_bytes')?.trim(), String(16 * 1024 * 1024));
  } finally {
    files.close();
    await rmdir(cgroup).catch(() => undefined);
  }
});

test('kept files: long ones read whole, links and missing files refused, closed by directory, by sweep and beyond the bound', async () => {
  const dir = await mkdtemp(join(tmpdir(), 'skiff-file-handles-'));
  const files = new CgroupFileHandles({ maxOpen: 3, sweepEveryMs: 0 });
  try {
    const dirs = ['a', 'b', 'c'].map((d) => join(dir, d));
    for (const d of dirs) {
      await mkdir(d);
      await writeFile(join(d, 'one'), `${d} 1\n`);
      await writeFile(join(d, 'two'), `${d} 2\n`);
    }
    const long = Array.from({ length: 5000 }, (_, i) => `${i}\n`).join('');
    await writeFile(join(dirs[0]!, 'long'), long);
    await symlink(join(dirs[0]!, 'one'), join(dirs[0]!, 'link'));
    assert.equal(files.read(dirs[0]!, 'long'), long);
    assert.equal(files.read(dirs[0]!, 'long'), long);
    assert.equal(files.read(dirs[0]!, 'link'), undefined);
    assert.equal(files.read(dirs[0]!, 'missing'), undefined);
    assert.equal(files.read(join(dir, 'nowhere'), 'one'), undefined);
    assert.equal(files.size, 1);

    files.closeDirs([dirs[0]]);
    assert.equal(files.size, 0);
    assert.equal(await openUnder(dir), 0);

    // Beyond three open files the least recently read directory's are closed.
    files.read(dirs[0]!, 'one');
    files.read(dirs[0]!, 'two');
    files.read(dirs[1]!, 'one');
    files.read(dirs[0]!, 'one');
    files.read(dirs[2]!, 'one');
    assert.equal(files.size, 3);
    assert.equal(await openUnder(dirs[1]!), 0);
    assert.equal(await openUnder(dirs[0]!), 2);

    // A sweep closes what was not read since the one before.
    files.sweep();
    files.read(dirs[2]!, 'one');
    files.sweep();
    assert.equal(files.size, 1);
    assert.equal(await openUnder(dirs[2]!), 1);
    assert.equal(files.read(dirs[2]!, 'one'), `${dirs[2]} 1\n`);
  } finally {
    files.close();
    assert.equal(await openUnder(dir), 0);
    await rm(dir, { recursive: true, force: true });
  }
});
