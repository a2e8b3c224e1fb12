import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { promises as fs } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { readFileInRoot, resolveInRoot } from './secure-path.js';

describe('paths inside a container root', () => {
  it('follows symlinks without leaving the root', async () => {
    const root = await fs.mkdtemp(join(tmpdir(), 'skiff-root-'));
    try {
      await fs.mkdir(join(root, 'etc'));
      await fs.mkdir(join(root, 'data'));
      await fs.writeFile(join(root, 'data', 'passwd'), 'inside\n');
      await fs.symlink('/data/passwd', join(root, 'etc', 'passwd'));
      await fs.symlink('../../../../../../etc/hostname', join(root, 'etc', 'escape'));
      await fs.symlink('loop', join(root, 'loop'));
      assert.equal(await readFileInRoot(root, '/etc/passwd'), 'inside\n');
      assert.equal(await resolveInRoot(root, '/etc/escape'), join(root, 'etc', 'hostname'));
      assert.equal(await readFileInRoot(root, '/etc/escape'), undefined);
      assert.equal(await readFileInRoot(root, '/missing/file'), undefined);
      await assert.rejects(resolveInRoot(root, '/loop'), /too many symbolic links/);
    } finally {
      await fs.rm(root, { recursive: true, force: true });
    }
  });
});
