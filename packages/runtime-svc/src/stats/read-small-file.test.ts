import assert from 'node:assert/strict';
import { mkdtemp, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { readCgroupFileNow, readSmallFile } from './read-small-file.js';

test('a cgroup file is read whole, short or long; a missing one or a link is undefined', async () => {
  const dir = await mkdtemp(join(tmpdir(), 'skiff-read-file-'));
  try {
    const long = Array.from({ length: 5000 }, (_, i) => `${i}\n`).join('');
    await writeFile(join(dir, 'short'), '12345\n');
    await writeFile(join(dir, 'long'), long);
    await symlink(join(dir, 'short'), join(dir, 'link'));
    for (const read of [readCgroupFileNow, readSmallFile]) {
      assert.equal(await read(join(dir, 'short')), '12345\n');
      assert.equal(await read(join(dir, 'long')), long);
      assert.equal(await read(join(dir, 'missing')), undefined);
    }
    assert.equal(readCgroupFileNow(join(dir, 'link')), undefined);
    assert.equal(readCgroupFileNow('/proc/self/cgroup')?.includes(':'), true);
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
});
