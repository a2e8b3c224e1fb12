import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { promises as fs } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { eventually } from '@skiff/test-support';
import { diskUsage, DiskUsageCache } from './disk-usage.js';

describe('disk usage', () => {
  it('measures disk usage with hard links once', async () => {
    const root = await fs.mkdtemp(join(tmpdir(), 'skiff-du-'));
    try {
      await fs.writeFile(join(root, 'a'), Buffer.alloc(10_000));
      await fs.link(join(root, 'a'), join(root, 'b'));
      await fs.mkdir(join(root, 'd'));
      const usage = await diskUsage(root);
      assert.equal(usage.inodes, 2);
      assert.ok(usage.bytes >= 10_000);
      assert.deepEqual(await diskUsage(join(root, 'missing')), { bytes: 0, inodes: 0 });
    } finally {
      await fs.rm(root, { recursive: true, force: true });
    }
  });

  it('answers a stale value at once and has the new one after its background walk', async () => {
    const root = await fs.mkdtemp(join(tmpdir(), 'skiff-du-'));
    try {
      const cache = new DiskUsageCache(0);
      assert.equal((await cache.get(root)).inodes, 0);
      await fs.writeFile(join(root, 'a'), 'x');
      assert.equal((await cache.get(root)).inodes, 0, 'the stale value, while a walk starts');
      let inodes = 0;
      await eventually('the background walk ended', async () => (inodes = (await cache.get(root)).inodes) !== 0);
      assert.equal(inodes, 1);
    } finally {
      await fs.rm(root, { recursive: true, force: true });
    }
  });
});
