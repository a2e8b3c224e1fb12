import assert from 'node:assert/strict';
import { mkdir, mkdtemp, readFile, rm, symlink } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { MountCallError, mountFilesystem, unmountFilesystem } from './mount-calls.js';
import { runCommandsThroughSpawnServer, stopSpawnServer } from './run-command.js';

after(() => stopSpawnServer());

/** The options field (per mount) and the super options of `target` in this process's mount table. */
async function mountEntry(target: string): Promise<{ mountOptions: string[]; superOptions: string[] } | undefined> {
  for (const line of (await readFile('/proc/self/mountinfo', 'utf8')).split('\n')) {
    const [left, right] = line.split(' - ');
    const fields = left?.split(' ') ?? [];
    if (fields[4] !== target || right === undefined) continue;
    return { mountOptions: (fields[5] ?? '').split(','), superOptions: (right.split(' ')[2] ?? '').split(',') };
  }
  return undefined;
}

for (const through of ['mount(8)', 'the spawn helper'] as const) {
  test(`a tmpfs mounted and unmounted through ${through} gets its flags and its data`, async () => {
    if (through === 'the spawn helper') assert.ok(runCommandsThroughSpawnServer());
    else stopSpawnServer();
    const dir = await mkdtemp(join(tmpdir(), 'mount-calls-'));
    try {
      await mountFilesystem('tmpfs', 'mount-calls-test', dir, ['ro', 'nosuid', 'nodev', 'noexec', 'mode=0710', 'size=1m']);
      const entry = await mountEntry(dir);
      assert.ok(entry, 'the tmpfs is in the mount table');
      for (const flag of ['ro', 'nosuid', 'nodev', 'noexec']) assert.ok(entry.mountOptions.includes(flag), `${flag} in ${entry.mountOptions.join(',')}`);
      assert.ok(entry.superOptions.includes('size=1024k'), `size in ${entry.superOptions.join(',')}`);
      assert.ok(entry.superOptions.includes('mode=710'), `mode in ${entry.superOptions.join(',')}`);
      await unmountFilesystem(dir);
      assert.equal(await mountEntry(dir), undefined, 'unmounted');
      await assert.rejects(unmountFilesystem(dir), MountCallError, 'unmounting what is not mounted fails');
      await assert.rejects(mountFilesystem('tmpfs', 'mount-calls-test', join(dir, 'missing'), []), (err: unknown) => {
        assert.ok(err instanceof MountCallError);
        assert.match(err.message, /missing/);
        return true;
      });
    } finally {
      await unmountFilesystem(dir, true).catch(() => undefined);
      await rm(dir, { recursive: true, force: true });
    }
  });
}

test('a busy mount is refused with EBUSY and detached when lazy', async () => {
  assert.ok(runCommandsThroughSpawnServer());
  const dir = await mkdtemp(join(tmpdir(), 'mount-calls-'));
  try {
    await mountFilesystem('tmpfs', 'mount-calls-test', dir, []);
    const inner = await mkdtemp(join(dir, 'inner-'));
    await mountFilesystem('tmpfs', 'mount-calls-test', inner, []);
    await assert.rejects(unmountFilesystem(dir), (err: unknown) => err instanceof MountCallError && err.errno === 'EBUSY');
    await unmountFilesystem(dir, true);
    assert.equal(await mountEntry(dir), undefined);
    assert.equal(await mountEntry(inner), undefined);
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
});

test('an unmount through the spawn helper does not follow a link at the target to another mount', async () => {
  assert.ok(runCommandsThroughSpawnServer());
  const dir = await mkdtemp(join(tmpdir(), 'mount-calls-'));
  const decoy = join(dir, 'decoy');
  try {
    await mkdir(decoy);
    await mountFilesystem('tmpfs', 'mount-calls-decoy', decoy, []);
    await symlink(decoy, join(dir, 'link'));
    await assert.rejects(unmountFilesystem(join(dir, 'link'), true), (err: unknown) => err instanceof MountCallError && err.errno === 'EINVAL');
    assert.ok(await mountEntry(decoy), 'the mount the link points at is still there');
  } finally {
    await unmountFilesystem(decoy, true).catch(() => undefined);
    await rm(dir, { recursive: true, force: true });
  }
});
