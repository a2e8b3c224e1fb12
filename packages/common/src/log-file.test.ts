import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, readdir, readFile, rm, stat, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { openLogDirectory, openLogFile, UnsafeLogPath } from './log-file.js';

async function scratch(t: { after(fn: () => Promise<void>): void }): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'log-file-'));
  t.after(() => rm(dir, { recursive: true, force: true }));
  return dir;
}

test('the file and every missing directory above it are made, the directories 0755 and the file 0640', async (t) => {
  const dir = await scratch(t);
  const path = join(dir, 'pods', 'ns_pod_uid', 'ctr', '0.log');
  const handle = await openLogFile(path);
  await handle.write('one\n');
  await handle.close();
  assert.equal(await readFile(path, 'utf8'), 'one\n');
  assert.equal((await stat(path)).mode & 0o777, 0o640);
  assert.equal((await stat(join(dir, 'pods', 'ns_pod_uid'))).mode & 0o777, 0o755 & ~process.umask());
  await (await openLogDirectory(join(dir, 'pods', 'other'))).close();
  assert.ok((await stat(join(dir, 'pods', 'other'))).isDirectory());
});

test('a symbolic link at the file or at any directory level above it is refused, naming it, and nothing is made through it', async (t) => {
  const dir = await scratch(t);
  const target = join(dir, 'elsewhere');
  await mkdir(target);
  await writeFile(join(target, '0.log'), 'precious\n');
  const logs = join(dir, 'logs');
  await mkdir(join(logs, 'a', 'ctr'), { recursive: true });
  await symlink(join(target, '0.log'), join(logs, 'a', 'ctr', '0.log'));
  await mkdir(join(logs, 'b'), { recursive: true });
  await symlink(target, join(logs, 'b', 'ctr'));
  await symlink(target, join(logs, 'c'));
  await mkdir(join(logs, 'd'));
  await symlink(target, join(logs, 'd', 'pods'));
  // A dangling link: following it would create its target.
  await symlink(join(target, 'made.log'), join(logs, 'a', 'ctr', '1.log'));
  const cases = [
    [join(logs, 'a', 'ctr', '0.log'), join(logs, 'a', 'ctr', '0.log')],
    [join(logs, 'a', 'ctr', '1.log'), join(logs, 'a', 'ctr', '1.log')],
    [join(logs, 'b', 'ctr', '0.log'), join(logs, 'b', 'ctr')],
    [join(logs, 'c', 'ctr', '0.log'), join(logs, 'c')],
    [join(logs, 'd', 'pods', 'ns_pod_uid', 'ctr', '0.log'), join(logs, 'd', 'pods')],
  ];
  for (const [path, named] of cases) {
    await assert.rejects(openLogFile(path!), (err: Error) => err instanceof UnsafeLogPath && err.message.includes(`${named}: it is a symbolic link`), path);
  }
  await assert.rejects(openLogDirectory(join(logs, 'd', 'pods', 'ns_pod_uid')), /pods: it is a symbolic link/);
  assert.equal(await readFile(join(target, '0.log'), 'utf8'), 'precious\n');
  assert.deepEqual(await readdir(target), ['0.log'], 'nothing was made through a link');
});

test('a FIFO or a directory at the file, a file at a directory level, and a relative path are refused at once', async (t) => {
  const dir = await scratch(t);
  await mkdir(join(dir, 'pod', 'ctr'), { recursive: true });
  execFileSync('mkfifo', [join(dir, 'pod', 'ctr', 'fifo.log')]);
  await mkdir(join(dir, 'pod', 'ctr', 'dir.log'));
  await writeFile(join(dir, 'pod', 'file'), '');
  await assert.rejects(openLogFile(join(dir, 'pod', 'ctr', 'fifo.log')), /fifo\.log: it is not a regular file/);
  await assert.rejects(openLogFile(join(dir, 'pod', 'ctr', 'dir.log')), /dir\.log: it is not a regular file/);
  await assert.rejects(openLogFile(join(dir, 'pod', 'file', '0.log')), /log directory .*\/pod\/file: it is not a directory/);
  await assert.rejects(openLogFile('pod/0.log'), /is not absolute/);
  await assert.rejects(openLogFile(join(dir, 'pod', 'a\0b.log')), /contains a NUL byte/);
  assert.equal(existsSync(join(dir, 'pod', 'ctr', 'fifo.log')), true);
});

test('a log root moved to another disk by a bind mount is written through', { skip: process.getuid?.() !== 0 && 'needs root' }, async (t) => {
  const dir = await scratch(t);
  await mkdir(join(dir, 'disk'));
  await mkdir(join(dir, 'pods'));
  execFileSync('mount', ['--bind', join(dir, 'disk'), join(dir, 'pods')]);
  try {
    await (await openLogFile(join(dir, 'pods', 'pod', 'ctr', '0.log'))).close();
    assert.ok(existsSync(join(dir, 'disk', 'pod', 'ctr', '0.log')));
  } finally {
    execFileSync('umount', [join(dir, 'pods')]);
  }
});
