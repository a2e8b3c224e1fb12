import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, readFile, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { ContainerLog, UnsafeLogPath } from './container-log.js';

async function scratch(t: { after(fn: () => Promise<void>): void }): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'container-log-'));
  t.after(() => rm(dir, { recursive: true, force: true }));
  return dir;
}

test('the file and its directories are made as needed and appended to', async (t) => {
  const dir = await scratch(t);
  const path = join(dir, 'pods', 'ns_pod_uid', 'ctr', '0.log');
  const log = await ContainerLog.open('c', path);
  log.add([Buffer.from('one\n')]);
  await log.writePending();
  await log.close();
  assert.equal(await readFile(path, 'utf8'), 'one\n');
});

test('a symbolic link at the file, the container directory or the pod directory is refused, naming it', async (t) => {
  const dir = await scratch(t);
  const target = join(dir, 'elsewhere');
  await mkdir(target);
  await writeFile(join(target, '0.log'), 'precious\n');
  const pods = join(dir, 'pods');
  await mkdir(join(pods, 'a', 'ctr'), { recursive: true });
  await symlink(join(target, '0.log'), join(pods, 'a', 'ctr', '0.log'));
  await mkdir(join(pods, 'b'), { recursive: true });
  await symlink(target, join(pods, 'b', 'ctr'));
  await symlink(target, join(pods, 'c'));
  const cases = [
    [join(pods, 'a', 'ctr', '0.log'), join(pods, 'a', 'ctr', '0.log')],
    [join(pods, 'b', 'ctr', '0.log'), join(pods, 'b', 'ctr')],
    [join(pods, 'c', 'ctr', '0.log'), join(pods, 'c')],
  ];
  for (const [path, named] of cases) {
    await assert.rejects(ContainerLog.open('c', path!), (err: Error) => err instanceof UnsafeLogPath && err.message.includes(`${named}: it is a symbolic link`), path);
  }
  assert.equal(await readFile(join(target, '0.log'), 'utf8'), 'precious\n');
  assert.equal(existsSync(join(target, 'ctr')), false, 'nothing was made through a link');
});

test('a FIFO or a directory at the file is refused at once', async (t) => {
  const dir = await scratch(t);
  await mkdir(join(dir, 'pod', 'ctr'), { recursive: true });
  execFileSync('mkfifo', [join(dir, 'pod', 'ctr', 'fifo.log')]);
  await mkdir(join(dir, 'pod', 'ctr', 'dir.log'));
  await assert.rejects(ContainerLog.open('c', join(dir, 'pod', 'ctr', 'fifo.log')), /fifo\.log: it is not a regular file/);
  await assert.rejects(ContainerLog.open('c', join(dir, 'pod', 'ctr', 'dir.log')), /dir\.log: it is not a regular file/);
});

test('links above the pod directory are followed (a log root moved to another disk)', async (t) => {
  const dir = await scratch(t);
  await mkdir(join(dir, 'real-pods'));
  await symlink(join(dir, 'real-pods'), join(dir, 'pods'));
  const log = await ContainerLog.open('c', join(dir, 'pods', 'pod', 'ctr', '0.log'));
  await log.close();
  assert.ok(existsSync(join(dir, 'real-pods', 'pod', 'ctr', '0.log')));
});
