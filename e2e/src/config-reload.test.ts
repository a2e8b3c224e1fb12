/**
 * Live reload: `skiff reload` (SIGHUP to each service) makes image-svc take a changed
 * registries.conf without a restart; a broken file changes nothing and the service keeps serving
 * with what it had. A runtime handler added by a reload runs pods whose containers stream-svc
 * execs into, with and without a terminal, without a restart of either daemon.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { appendFile, chmod, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { status } from '@grpc/grpc-js';
import { callUnary, type ImageServiceClient } from '@skiff/proto';
import { getFreePort } from './lib/free-port.js';
import { openRemoteCommand } from './lib/remote-command.js';
import { startRuntimeHarness, type RuntimeHarness } from './lib/runtime-harness.js';
import { wsExec } from './lib/stream-client.js';
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

async function reload(instance: SkiffInstance = skiff): Promise<void> {
  const { stdout } = await run(process.execPath, [SKIFF_ENTRY, 'reload', '--config', instance.configPath]);
  assert.match(stdout, /image-svc: reloading/);
}

async function untilLogged(text: RegExp, from: number, instance: SkiffInstance = skiff): Promise<void> {
  for (const deadline = Date.now() + 20_000; Date.now() < deadline; await new Promise((r) => setTimeout(r, 100))) {
    if (text.test(instance.output().slice(from))) return;
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
    await untilLogged(/"service":"image-svc".*"configuration reloaded"/, logged);
    await callUnary(images, 'PullImage', { image: { image: reference } }, { timeoutMs: 60_000 });
    assert.equal(await skiff.servicePid('image-svc'), pid, 'no restart');
  });

  test('a broken registries.conf changes nothing: the service keeps serving with the mirror it had', async () => {
    const pid = await skiff.servicePid('image-svc');
    await writeFile(join(skiff.dir, 'registries.conf'), '[[registry]\nlocation = ');
    const logged = skiff.output().length;
    await reload();
    await untilLogged(/"service":"image-svc".*"configuration not reloaded/, logged);
    await callUnary(images, 'RemoveImage', { image: { image: reference } }, { timeoutMs: 60_000 });
    await callUnary(images, 'PullImage', { image: { image: reference } }, { timeoutMs: 60_000 });
    assert.equal(await skiff.servicePid('image-svc'), pid, 'no restart');
  });
});

/**
 * runc under another name, with a global flag of its own that runc does not know: it notes each
 * command it runs in the file the flag names, and runs runc without the flag.
 */
const WRAPPED_RUNC = `#!/bin/sh
log=
for arg do
  shift
  case $arg in
    --wrapper-log=*) log=\${arg#--wrapper-log=} ;;
    *) set -- "$@" "$arg" ;;
  esac
done
[ -z "$log" ] && { echo "wrapped-runc: --wrapper-log is required" >&2; exit 2; }
echo "$*" >>"$log"
exec /usr/sbin/runc "$@"
`;

describe('a runtime handler added by skiff reload', () => {
  let h: RuntimeHarness;

  before(async () => {
    h = await startRuntimeHarness();
  });

  after(async () => {
    await h?.stop();
  });

  test('runs pods, and stream-svc execs into their containers with and without a terminal, with no restart', async () => {
    const wrapper = join(h.skiff.dir, 'wrapped-runc');
    const wrapperLog = join(h.skiff.dir, 'wrapped-runc.log');
    await writeFile(wrapper, WRAPPED_RUNC);
    await chmod(wrapper, 0o755);
    const pids = { runtime: await h.skiff.servicePid('runtime-svc'), stream: await h.skiff.servicePid('stream-svc') };
    await appendFile(h.skiff.configPath, ['', '[[runtime.handlers]]', 'name = "wrapped"', `runtime_path = "${wrapper}"`, `runtime_args = ["--wrapper-log=${wrapperLog}"]`, ''].join('\n'));
    const logged = h.skiff.output().length;
    await reload(h.skiff);
    await untilLogged(/"service":"runtime-svc".*"configuration reloaded"/, logged, h.skiff);
    await untilLogged(/"service":"stream-svc".*"configuration reloaded"/, logged, h.skiff);

    const pod = await h.runPod({}, 'wrapped');
    const app = await h.runContainer(pod, 'app');
    assert.match(await readFile(wrapperLog, 'utf8'), new RegExp(`\\bstart ${app}\\b`), 'the container runs under the added handler');

    const url = (await callUnary(h.runtime, 'Exec', { container_id: app, cmd: ['sh', '-c', 'cat; echo to-err >&2; exit 3'], stdin: true, stdout: true, stderr: true })).url;
    const plain = await wsExec(url, 'v5.channel.k8s.io', Buffer.from('piped-through\n'));
    assert.equal(plain.stdout.toString(), 'piped-through\n', plain.error);
    assert.equal(plain.stderr.toString(), 'to-err\n');
    assert.deepEqual(JSON.parse(plain.error).details?.causes, [{ reason: 'ExitCode', message: '3' }]);

    const terminal = await openRemoteCommand((await callUnary(h.runtime, 'Exec', { container_id: app, cmd: ['sh'], tty: true, stdin: true, stdout: true })).url);
    terminal.send('echo in-$((6*7)) $(tty); exit 5\n');
    await terminal.waitForStdout(/in-42 \/dev\/pts\/\d+\r\n/);
    await terminal.closed;
    assert.equal(terminal.exitCode(), 5, JSON.stringify(terminal.status));

    const execs = (await readFile(wrapperLog, 'utf8')).split('\n').filter((line) => line.split(' ').includes('exec') && line.split(' ').includes(app));
    assert.equal(execs.length, 2, 'both execs ran through the added handler');
    assert.deepEqual({ runtime: await h.skiff.servicePid('runtime-svc'), stream: await h.skiff.servicePid('stream-svc') }, pids, 'no daemon restarted');
  });
});
