/**
 * NRI through the CRI: plugins built on containerd/nri's plugin stub register on the root-only
 * socket; a message larger than the Go side reads at once reaches it, and a Synchronize larger than
 * a ttrpc message reaches it split; a logger sees every event of a pod's life in order, a
 * container's own exit as its stop; a pod is taken in by the plugins
 * before it is listed, and one a plugin refuses is undone; an adjusting plugin's environment,
 * device, OCI hook, rlimit and annotation reach the container; a validator's refusal and a conflict
 * of two plugins fail CreateContainer with the plugins named and nothing left; a plugin that hangs
 * or crashes mid-call costs one request timeout and is disconnected; a plugin's updates of another
 * container's memory limit (in its CreateContainer answer and asked for with UpdateContainers) reach
 * the cgroup, its eviction stops a container and an update of an unknown one comes back failed; raw peers sending oversized or
 * malformed frames, or never registering, are disconnected while pods keep being made; after a
 * restart a pre-installed plugin is started with its configuration file and synchronized; under
 * gVisor what the sandbox kernel cannot honour (a device) is refused, the rest applies.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { access, chmod, mkdir, readFile, stat, writeFile } from 'node:fs/promises';
import { connect, type Socket } from 'node:net';
import { join } from 'node:path';
import { status } from '@grpc/grpc-js';
import { callUnary, MuxConnId, TtrpcMessageType, encodeTtrpcFrame, type cri } from '@skiff/proto';
import { rejectsWithCode } from './lib/grpc-assert.js';
import { nriPluginBinary, startNriPlugin, type NriPluginProcess } from './lib/nri-plugins.js';
import { startRuntimeHarness, UNDER_GVISOR, type Pod, type RuntimeHarness } from './lib/runtime-harness.js';
import { makeTempDir, removeDir } from './lib/tmp.js';

let h: RuntimeHarness;
let pod: Pod;
let base: string;
let socket: string;
let binary: string;
const plugins: NriPluginProcess[] = [];

before(async () => {
  binary = await nriPluginBinary();
  base = await makeTempDir('skiff-nri');
  socket = join(base, 'nri.sock');
  h = await startRuntimeHarness({ skiff: { nriConfig: `socket = "${socket}"\nregistration_timeout = "2s"\nrequest_timeout = "3s"` } });
  pod = await h.runPod();
});

after(async () => {
  for (const p of plugins) await p.stop();
  await h?.stop();
  if (base) await removeDir(base);
});

function timesLogged(needle: string, plugin: string): number {
  return h.skiff.output().split('\n').filter((line) => line.includes(needle) && line.includes(`"${plugin}"`)).length;
}

function logged(needle: string, plugin: string): boolean {
  return timesLogged(needle, plugin) > 0;
}

/** A plugin of a name an earlier test registered too is ready once it is registered once more. */
async function plugin(name: string, idx: string, args: string[]): Promise<NriPluginProcess> {
  const earlier = timesLogged('NRI plugin registered', `${idx}-${name}`);
  const p = await startNriPlugin(binary, socket, ['-name', name, '-idx', idx, ...args], () => timesLogged('NRI plugin registered', `${idx}-${name}`) > earlier).catch((err: unknown) => {
    const runtimeSide = h.skiff.output().split('\n').filter((line) => line.includes(`"${idx}-${name}"`));
    throw new Error(`${(err as Error).message}\nruntime-svc on ${idx}-${name}:\n${runtimeSide.slice(-10).join('\n')}`);
  });
  plugins.push(p);
  return p;
}

async function until(what: string, check: () => boolean | Promise<boolean>, timeoutMs = 20_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

async function sh(id: string, script: string): Promise<string> {
  const r = await h.exec(id, ['sh', '-c', script]);
  assert.equal(r.code, 0, r.stderr);
  return r.stdout;
}

async function containerNames(podId: string): Promise<string[]> {
  const { containers } = await callUnary(h.runtime, 'ListContainers', { filter: { pod_sandbox_id: podId } }, { timeoutMs: 10_000 });
  return containers.map((c) => c.metadata?.name ?? '');
}

describe('NRI', () => {
  test('the plugin socket is root-only', async () => {
    assert.equal((await stat(socket)).mode & 0o777, 0o600);
  });

  test('a logger is synchronized with the pods there are and sees every event of a pod life in order', async () => {
    const log = join(base, 'events.log');
    const logger = await plugin('logger', '10', ['-mode', 'logger', '-log', log]);
    const lines = async (): Promise<string[]> => (existsSync(log) ? (await readFile(log, 'utf8')).trim().split('\n') : []);
    assert.ok((await lines()).includes(`Synchronize ${pod.config.metadata?.name} -`));
    const life = await h.runPod();
    const podName = life.config.metadata?.name ?? '';
    const id = await h.runContainer(life, 'logged');
    await callUnary(h.runtime, 'UpdateContainerResources', { container_id: id, linux: { cpu_shares: 512 } }, { timeoutMs: 30_000 });
    await callUnary(h.runtime, 'UpdatePodSandboxResources', { pod_sandbox_id: life.id, resources: { cpu_shares: 1024 } }, { timeoutMs: 30_000 });
    await callUnary(h.runtime, 'StopContainer', { container_id: id, timeout: 1 }, { timeoutMs: 30_000 });
    await callUnary(h.runtime, 'RemoveContainer', { container_id: id }, { timeoutMs: 30_000 });
    await callUnary(h.runtime, 'StopPodSandbox', { pod_sandbox_id: life.id }, { timeoutMs: 30_000 });
    await callUnary(h.runtime, 'RemovePodSandbox', { pod_sandbox_id: life.id }, { timeoutMs: 30_000 });
    await logger.stop();
    const events = (await lines()).filter((l) => l.split(' ')[1] === podName).map((l) => l.split(' ').filter((_, i) => i !== 1).join(' '));
    assert.deepEqual(events, [
      'RunPodSandbox -',
      'CreateContainer logged',
      'PostCreateContainer logged',
      'StartContainer logged',
      'PostStartContainer logged',
      'UpdateContainer(cpu.shares=512) logged',
      'PostUpdateContainer logged',
      'UpdatePodSandbox -',
      'PostUpdatePodSandbox -',
      'StopContainer logged',
      'RemoveContainer logged',
      'StopPodSandbox -',
      'RemovePodSandbox -',
    ]);
  });

  test('a container that exits on its own is reported stopped once, without a StopContainer call', async () => {
    const log = join(base, 'exits.log');
    const logger = await plugin('exit-logger', '11', ['-mode', 'logger', '-log', log]);
    const life = await h.runPod();
    const podName = life.config.metadata?.name ?? '';
    const events = async (): Promise<string[]> =>
      (existsSync(log) ? (await readFile(log, 'utf8')).trim().split('\n') : [])
        .filter((l) => l.split(' ')[1] === podName && l.split(' ')[2] === 'exits')
        .map((l) => l.split(' ')[0]!);
    const id = await h.runContainer(life, 'exits', { command: ['sh', '-c', 'exit 3'] });
    await until('the StopContainer event of the exit', async () => (await events()).includes('StopContainer'));
    // A StopContainer of the exited container stops nothing and is not reported again.
    await callUnary(h.runtime, 'StopContainer', { container_id: id, timeout: 1 }, { timeoutMs: 30_000 });
    await callUnary(h.runtime, 'RemoveContainer', { container_id: id }, { timeoutMs: 30_000 });
    await until('the RemoveContainer event', async () => (await events()).includes('RemoveContainer'));
    await callUnary(h.runtime, 'StopPodSandbox', { pod_sandbox_id: life.id }, { timeoutMs: 30_000 });
    await callUnary(h.runtime, 'RemovePodSandbox', { pod_sandbox_id: life.id }, { timeoutMs: 30_000 });
    await logger.stop();
    assert.deepEqual(await events(), ['CreateContainer', 'PostCreateContainer', 'StartContainer', 'PostStartContainer', 'StopContainer', 'RemoveContainer']);
  });

  test('a message larger than a Go plugin reads at once (a 16 KiB annotation) reaches it whole', async () => {
    const log = join(base, 'large.log');
    const logger = await plugin('large-logger', '10', ['-mode', 'logger', '-log', log]);
    try {
      await h.createContainer(pod, 'large-message', { annotations: { 'nri.skiff.test/large': 'x'.repeat(16 << 10) } });
      assert.ok((await readFile(log, 'utf8')).includes(`CreateContainer ${pod.config.metadata?.name} large-message`));
      assert.ok(!logged('NRI plugin disconnected', '10-large-logger'));
    } finally {
      await logger.stop();
    }
  });

  test('a Synchronize over the 4 MiB ttrpc limit (five pods of 1 MiB of annotations) reaches the stub in several requests, whole', async () => {
    const large: Pod[] = [];
    let logger: NriPluginProcess | undefined;
    try {
      for (let i = 0; i < 5; i++) large.push(await h.runPod({ annotations: { 'nri.skiff.test/blob': String(i).repeat(1 << 20) } }));
      const log = join(base, 'split-sync.log');
      logger = await plugin('split-logger', '10', ['-mode', 'logger', '-log', log]);
      const lines = (await readFile(log, 'utf8')).trim().split('\n');
      for (const p of [pod, ...large]) assert.ok(lines.includes(`Synchronize ${p.config.metadata?.name} -`), `${p.config.metadata?.name} in ${lines.join(', ')}`);
      assert.ok(logged('NRI Synchronize split into several requests', '10-split-logger'));
      assert.ok(!logged('NRI plugin disconnected', '10-split-logger'));
    } finally {
      // The large pods would make every later plugin's Synchronize split too.
      await logger?.stop();
      for (const p of large) {
        await callUnary(h.runtime, 'StopPodSandbox', { pod_sandbox_id: p.id }, { timeoutMs: 30_000 });
        await callUnary(h.runtime, 'RemovePodSandbox', { pod_sandbox_id: p.id }, { timeoutMs: 30_000 });
      }
    }
  });

  test('an adjusting plugin: environment, annotation, a device, an OCI hook, an rlimit and a memory limit', async () => {
    const hookFile = join(base, 'hook-ran');
    const adjuster = await plugin('adjust', '20', [
      '-mode', 'adjust', '-only', 'adj-', '-env', 'NRI_ADDED=yes', '-annotation', 'nri.skiff.test/added=1',
      '-device', '/dev/nri-null:1:3', '-hook', `echo ran > ${hookFile}`, '-nofile', '1234', '-memory', String(96 << 20),
    ]);
    try {
      if (UNDER_GVISOR) {
        // A device added in the sandbox kernel would have no effect: refused (see the gVisor test below).
        await rejectsWithCode(h.runContainer(pod, 'adj-1'), status.FAILED_PRECONDITION, /NRI plugin "20-adjust" adjusts the devices of a container of handler "runsc"/);
        return;
      }
      const id = await h.runContainer(pod, 'adj-1');
      assert.equal(await sh(id, 'echo $NRI_ADDED'), 'yes\n');
      assert.equal(await sh(id, 'echo x > /dev/nri-null && echo ok'), 'ok\n');
      assert.equal(await sh(id, 'ulimit -n'), '1234\n');
      assert.equal(await readFile(hookFile, 'utf8'), 'ran\n');
      const spec = JSON.parse(await readFile(join(h.skiff.root, 'runtime', 'containers', id, 'config.json'), 'utf8')) as { annotations: Record<string, string>; linux: { resources: { memory: { limit: number } } } };
      assert.equal(spec.annotations['nri.skiff.test/added'], '1');
      assert.equal(spec.linux.resources.memory.limit, 96 << 20);
      const other = await h.runContainer(pod, 'plain-1');
      assert.equal(await sh(other, 'echo "[$NRI_ADDED]"'), '[]\n');
    } finally {
      await adjuster.stop();
    }
  });

  test("a plugin's updates of another container's memory limit, in its answer and asked for, go through to the cgroup; its eviction stops a container", async () => {
    const updaterLog = join(base, 'updater.log');
    const loggerLog = join(base, 'update-events.log');
    // gVisor keeps no per-container memory limit (runtime-svc's README): there the limit recorded is read.
    const memoryLimit = async (id: string): Promise<number> =>
      Number(UNDER_GVISOR ? (await h.containerStatus(id)).resources?.linux?.memory_limit_in_bytes : await sh(id, 'cat /sys/fs/cgroup/memory/memory.limit_in_bytes'));
    const updaterLines = async (): Promise<string[]> => (existsSync(updaterLog) ? (await readFile(updaterLog, 'utf8')).trim().split('\n') : []);
    const target = await h.runContainer(pod, 'upd-target');
    const victim = await h.runContainer(pod, 'upd-victim');
    const logger = await plugin('update-logger', '10', ['-mode', 'logger', '-log', loggerLog]);
    const updater = await plugin('updater', '50', [
      '-mode', 'updater', '-trigger', 'upd-trigger', '-target', 'upd-target', '-evict', 'upd-victim',
      '-reply-memory', String(80 << 20), '-memory', String(112 << 20), '-log', updaterLog,
    ]);
    try {
      const trigger = await h.createContainer(pod, 'upd-trigger');
      await until("the CreateContainer answer's update", async () => (await memoryLimit(target)) === 80 << 20);
      await callUnary(h.runtime, 'StartContainer', { container_id: trigger }, { timeoutMs: 60_000 });
      await until('the UpdateContainers request to be answered', async () => (await updaterLines()).some((l) => l.startsWith('UpdateContainers-done')));
      assert.equal(await memoryLimit(target), 112 << 20);
      const status = await h.waitForExit(victim);
      assert.notEqual(status.exit_code, 0);
      assert.equal((await h.containerStatus(target)).state, 'CONTAINER_RUNNING');
      assert.equal((await h.containerStatus(trigger)).state, 'CONTAINER_RUNNING');
      const lines = await updaterLines();
      assert.deepEqual(lines.filter((l) => l.startsWith('failed')), [`failed ${pod.config.metadata?.name} no-such-container`]);
      assert.ok(!lines.some((l) => l.startsWith('UpdateContainer ')), `the updater was told of its own updates: ${lines.join('; ')}`);
      const events = (await readFile(loggerLog, 'utf8')).trim().split('\n');
      assert.equal(events.filter((l) => l.startsWith('UpdateContainer(') && l.endsWith(' upd-target')).length, 2);
      assert.ok(events.includes(`StopContainer ${pod.config.metadata?.name} upd-victim`));
      assert.equal((await h.containerStatus(target)).resources?.linux?.memory_limit_in_bytes, String(112 << 20));
    } finally {
      await updater.stop();
      await logger.stop();
    }
  });

  test('under gVisor (runsc) an environment variable applies and a device is refused, naming the plugin', async () => {
    const sandboxed = await h.runPod({ linux: { security_context: { namespace_options: { pid: 'POD' } } } }, 'runsc');
    const env = await plugin('adjust', '20', ['-mode', 'adjust', '-only', 'gv-env', '-env', 'NRI_ADDED=gvisor']);
    const dev = await plugin('devices', '21', ['-mode', 'adjust', '-only', 'gv-dev', '-device', '/dev/nri-null:1:3']);
    try {
      const id = await h.runContainer(sandboxed, 'gv-env');
      assert.equal(await sh(id, 'echo $NRI_ADDED'), 'gvisor\n');
      await rejectsWithCode(h.createContainer(sandboxed, 'gv-dev'), status.FAILED_PRECONDITION, /NRI plugin "21-devices" adjusts the devices of a container of handler "runsc"/);
      assert.ok(!(await containerNames(sandboxed.id)).includes('gv-dev'));
    } finally {
      await env.stop();
      await dev.stop();
    }
  });

  test('a validator refuses a container with its reason in the status, and nothing of it is left', async () => {
    const validator = await plugin('validator', '30', ['-mode', 'validator', '-refuse', 'bad-']);
    try {
      await rejectsWithCode(h.createContainer(pod, 'bad-1'), status.FAILED_PRECONDITION, /NRI validator "30-validator" refused .*bad-1.*not allowed on this node/);
      assert.ok(!(await containerNames(pod.id)).includes('bad-1'));
      // A log file left would make the kubelet number its retry as restart 1.
      await assert.rejects(access(join(pod.config.log_directory!, 'bad-1.log')), { code: 'ENOENT' }, 'the refused container left no log file');
      await h.createContainer(pod, 'good-1');
    } finally {
      await validator.stop();
    }
  });

  test('a plugin takes a pod in before it is listed; one that refuses it fails RunPodSandbox, leaving nothing, and a retry goes through', async () => {
    const log = join(base, 'gate.log');
    const release = join(base, 'gate-release');
    const gate = await plugin('pod-gate', '40', ['-mode', 'pod-gate', '-refuse', 'refused-', '-hold', 'held-', '-release', release, '-log', log]);
    const named = (name: string): cri.PodSandboxConfig => h.podConfig({ metadata: { name, namespace: 'skiff-e2e', uid: `${name}-${Date.now()}`, attempt: 0 } });
    const refused = named(`refused-${process.pid}`);
    const held = named(`held-${process.pid}`);
    const made: string[] = [];
    try {
      const was = await h.settledInventory();
      await rejectsWithCode(
        callUnary(h.runtime, 'RunPodSandbox', { config: refused }, { timeoutMs: 60_000 }),
        status.FAILED_PRECONDITION,
        /NRI plugin "40-pod-gate" refused RunPodSandbox of pod skiff-e2e\/refused-.*not allowed on this node/,
      );
      const now = await h.settledInventory();
      assert.deepEqual([now.mounts, now.netns, now.sandboxDirs, now.cgroups], [was.mounts, was.netns, was.sandboxDirs, was.cgroups], 'nothing of a refused pod stays');

      const running = callUnary(h.runtime, 'RunPodSandbox', { config: held }, { timeoutMs: 60_000 });
      await until('the plugin to hold the pod', async () => existsSync(log) && (await readFile(log, 'utf8')).includes(`holding ${held.metadata?.name}`));
      const listed = async (name: string | undefined): Promise<boolean> =>
        (await callUnary(h.runtime, 'ListPodSandbox', {}, { timeoutMs: 10_000 })).items.some((p) => p.metadata?.name === name);
      assert.equal(await listed(held.metadata?.name), false, 'a pod its plugins are taking in is not listed');
      await writeFile(release, '');
      made.push((await running).pod_sandbox_id);
      assert.equal(await listed(held.metadata?.name), true);
    } finally {
      await gate.stop();
    }
    made.push((await callUnary(h.runtime, 'RunPodSandbox', { config: refused }, { timeoutMs: 60_000 })).pod_sandbox_id);
    for (const id of made) {
      await callUnary(h.runtime, 'StopPodSandbox', { pod_sandbox_id: id }, { timeoutMs: 30_000 });
      await callUnary(h.runtime, 'RemovePodSandbox', { pod_sandbox_id: id }, { timeoutMs: 30_000 });
    }
  });

  test("the community's default validator refuses hook injection, naming the plugin, and requires plugins", async () => {
    const strict = await plugin('default-validator', '90', ['-mode', 'default-validator', '-reject-hooks', '-required', 'adjust']);
    const adjuster = await plugin('adjust', '20', ['-mode', 'adjust', '-only', 'hooked-', '-hook', 'true', '-env', 'A=1']);
    try {
      await rejectsWithCode(h.createContainer(pod, 'hooked-1'), status.FAILED_PRECONDITION, /"90-default-validator" refused .*plugin "20-adjust" attempted restricted OCI hook injection/);
      await h.createContainer(pod, 'unhooked-1');
      const closed = timesLogged('NRI connection closed', '20-adjust');
      await adjuster.stop();
      await until('the adjuster to be gone', () => timesLogged('NRI connection closed', '20-adjust') > closed);
      await rejectsWithCode(h.createContainer(pod, 'unhooked-2'), status.FAILED_PRECONDITION, /required plugin "adjust"/);
    } finally {
      await adjuster.stop();
      await strict.stop();
    }
  });

  test('two plugins adjusting the same variable are refused, both named', async () => {
    const first = await plugin('adjust', '20', ['-mode', 'adjust', '-only', 'clash-', '-env', 'SAME=1']);
    const second = await plugin('adjust2', '25', ['-mode', 'adjust', '-only', 'clash-', '-env', 'SAME=2']);
    try {
      await rejectsWithCode(h.createContainer(pod, 'clash-1'), status.FAILED_PRECONDITION, /"20-adjust" and "25-adjust2" both adjust the environment variable SAME/);
      assert.ok(!(await containerNames(pod.id)).includes('clash-1'));
    } finally {
      await first.stop();
      await second.stop();
    }
  });

  test('a plugin that hangs, then one that crashes mid-call, is disconnected and containers are still made', async () => {
    const hang = await plugin('hang', '40', ['-mode', 'hang']);
    await h.createContainer(pod, 'after-hang');
    await until('the hung plugin to be disconnected', () => logged('NRI plugin disconnected', '40-hang'));
    await hang.stop();
    const crash = await plugin('crash', '41', ['-mode', 'crash']);
    await h.createContainer(pod, 'after-crash');
    assert.equal(await crash.exited, 3);
    await h.createContainer(pod, 'after-both');
  });

  test('raw peers sending oversized or malformed frames, or never registering, are disconnected', async () => {
    const open = (): Promise<Socket> =>
      new Promise((resolve, reject) => {
        const s = connect(socket, () => resolve(s));
        s.once('error', reject);
      });
    const closed = (s: Socket): Promise<void> => new Promise((resolve) => (s.destroyed ? resolve() : s.once('close', () => resolve())));
    const chunk = (id: number, payload: Buffer, announced = payload.length): Buffer => {
      const header = Buffer.alloc(8);
      header.writeUInt32BE(id, 0);
      header.writeUInt32BE(announced, 4);
      return Buffer.concat([header, payload]);
    };
    const oversized = await open();
    oversized.on('error', () => {});
    oversized.write(chunk(MuxConnId.RuntimeService, Buffer.from([0x7f, 0xff, 0xff, 0xff, 0, 0, 0, 1, 1, 0])));
    const garbage = await open();
    garbage.on('error', () => {});
    garbage.write(chunk(MuxConnId.RuntimeService, encodeTtrpcFrame(1, TtrpcMessageType.Request, Buffer.from([0xff, 0xff, 0xff, 0xff]))));
    const silent = await open();
    silent.on('error', () => {});
    await Promise.all([closed(oversized), closed(garbage), closed(silent), h.runPod()]);
  });

  test('after a restart, a pre-installed plugin is started with its configuration and synchronized with the pods there are', async () => {
    const log = join(base, 'preinstalled.log');
    await mkdir(join(h.skiff.dir, 'nri-plugins'), { recursive: true });
    await mkdir(join(h.skiff.dir, 'nri-conf.d'), { recursive: true });
    const wrapper = join(h.skiff.dir, 'nri-plugins', '05-prelogger');
    await writeFile(wrapper, `#!/bin/sh\nexec ${binary} -mode logger -log ${log}\n`);
    await chmod(wrapper, 0o755);
    await writeFile(join(h.skiff.dir, 'nri-conf.d', 'prelogger.conf'), 'configured-by-file\n');
    await h.restartSkiff();
    await until('the pre-installed plugin to register', () => logged('NRI plugin registered', '05-prelogger'));
    await h.createContainer(pod, 'seen-by-prelogger');
    const lines = (await readFile(log, 'utf8')).trim().split('\n');
    assert.equal(lines[0], 'Configure configured-by-file -');
    assert.ok(lines.includes(`Synchronize ${pod.config.metadata?.name} -`));
    assert.ok(lines.includes(`CreateContainer ${pod.config.metadata?.name} seen-by-prelogger`));
  });
});
