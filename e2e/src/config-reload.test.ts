/**
 * Live reload: `skiff reload` (SIGHUP to each service) makes image-svc take a changed
 * registries.conf without a restart; a broken file changes nothing and the service keeps serving
 * with what it had.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { status } from '@grpc/grpc-js';
import { callUnary, type ImageServiceClient } from '@skiff/proto';
import { getFreePort } from './lib/free-port.js';
import { rejectsWithCode } from './lib/grpc-assert.js';
import { pushTestImage } from './lib/image-catalogue.js';
import { startRegistry, type Registry } from './lib/registry.js';
import { SKIFF_ENTRY, startSkiff, type SkiffInstance } from './lib/skiff-instance.js';

const run = promisify(execFile);
let registry: Registry;
let skiff: SkiffInstance;
let images: ImageServiceClient;
/** Where nothing listens: pulls from it only work through a mirror. */
let deadHost: string;
let reference: string;

async function reload(): Promise<void> {
  const { stdout } = await run(process.execPath, [SKIFF_ENTRY, 'reload', '--config', skiff.configPath]);
  assert.match(stdout, /image-svc: reloading/);
}

async function untilLogged(text: RegExp, from: number): Promise<void> {
  for (const deadline = Date.now() + 20_000; Date.now() < deadline; await new Promise((r) => setTimeout(r, 100))) {
    if (text.test(skiff.output().slice(from))) return;
  }
  assert.fail(`the services never logged ${text}`);
}

before(async () => {
  registry = await startRegistry();
  const pushed = await pushTestImage(registry, 'busybox');
  deadHost = `127.0.0.1:${await getFreePort()}`;
  reference = pushed.reference.replace(registry.host, deadHost);
  skiff = await startSkiff({ registriesConf: '' });
  images = skiff.imageClient();
});

after(async () => {
  await skiff?.stop();
  await registry?.stop();
});

describe('skiff reload', () => {
  test('a mirror added to registries.conf is used after a reload, by the same image-svc', async () => {
    await rejectsWithCode(callUnary(images, 'PullImage', { image: { image: reference } }, { timeoutMs: 60_000 }), status.UNAVAILABLE);
    const pid = await skiff.servicePid('image-svc');
    await writeFile(join(skiff.dir, 'registries.conf'), ['[[registry]]', `location = "${deadHost}"`, '[[registry.mirror]]', `location = "${registry.host}"`].join('\n'));
    const logged = skiff.output().length;
    await reload();
    await untilLogged(/configuration reloaded/, logged);
    await callUnary(images, 'PullImage', { image: { image: reference } }, { timeoutMs: 60_000 });
    assert.equal(await skiff.servicePid('image-svc'), pid, 'no restart');
  });

  test('a broken registries.conf changes nothing: the service keeps serving with the mirror it had', async () => {
    await writeFile(join(skiff.dir, 'registries.conf'), '[[registry]\nlocation = ');
    const logged = skiff.output().length;
    await reload();
    await untilLogged(/configuration not reloaded/, logged);
    await callUnary(images, 'RemoveImage', { image: { image: reference } }, { timeoutMs: 60_000 });
    await callUnary(images, 'PullImage', { image: { image: reference } }, { timeoutMs: 60_000 });
  });
});
