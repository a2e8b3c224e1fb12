import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { promises as fs } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { execFileSync } from 'node:child_process';
import { ContainerFileError, readFileInRoot, resolveInRoot } from './secure-path.js';

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

  it('refuses a FIFO, a device and an oversized file at once instead of reading them', async () => {
    const root = await fs.mkdtemp(join(tmpdir(), 'skiff-root-'));
    try {
      await fs.mkdir(join(root, 'etc'));
      execFileSync('mkfifo', [join(root, 'etc', 'passwd')]);
      execFileSync('mknod', [join(root, 'etc', 'group'), 'c', '1', '5']);
      await fs.writeFile(join(root, 'etc', 'big'), Buffer.alloc(2048));
      await fs.mkdir(join(root, 'etc', 'dir'));
      await assert.rejects(readFileInRoot(root, '/etc/passwd'), (err: unknown) => err instanceof ContainerFileError && /\/etc\/passwd is not a regular file \(a FIFO\)/.test(err.message));
      await assert.rejects(readFileInRoot(root, '/etc/group'), (err: unknown) => err instanceof ContainerFileError && /character device/.test(err.message));
      await assert.rejects(readFileInRoot(root, '/etc/big', 1024), (err: unknown) => err instanceof ContainerFileError && /2048 bytes/.test(err.message));
      assert.equal(await readFileInRoot(root, '/etc/dir'), undefined);
    } finally {
      await fs.rm(root, { recursive: true, force: true });
    }
  });
});
