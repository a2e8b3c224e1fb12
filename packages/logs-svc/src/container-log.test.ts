import assert from 'node:assert/strict';
import { mkdir, mkdtemp, readdir, readFile, rm, symlink } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { UnsafeLogPath } from '@skiff/common/core';
import { ContainerLog } from './container-log.js';

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

test('a pod log root reached through a symbolic link is refused, and nothing is made through it', async (t) => {
  const dir = await scratch(t);
  await mkdir(join(dir, 'elsewhere'));
  await symlink(join(dir, 'elsewhere'), join(dir, 'pods'));
  await assert.rejects(ContainerLog.open('c', join(dir, 'pods', 'ns_pod_uid', 'ctr', '0.log')), (err: Error) => err instanceof UnsafeLogPath && err.message.includes(`${join(dir, 'pods')}: it is a symbolic link`));
  assert.deepEqual(await readdir(join(dir, 'elsewhere')), []);
});
