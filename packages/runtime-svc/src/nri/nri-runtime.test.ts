import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, statSync } from 'node:fs';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { after, test } from 'node:test';
import { status } from '@grpc/grpc-js';
import { createLogger } from '@skiff/common';
import { NriConnection, TtrpcCallError, TtrpcCode } from '@skiff/proto';
import { eventually } from '@skiff/test-support';
import type { ContainerRecord, SandboxRecord } from '../state/records.js';
import { MAX_CONTAINER_CHANGES, NriRuntime, type NriContainerControl } from './nri-runtime.js';

const dir = mkdtempSync(join(tmpdir(), 'nri-runtime-'));
after(() => rmSync(dir, { recursive: true, force: true }));
let count = 0;

const pod = { id: 'pod1', metadata: { name: 'web', uid: 'u1', namespace: 'default', attempt: 0 }, labels: {}, annotations: {}, runtimeHandler: '', cgroupParent: '/p', cgroupsPath: '/p/pod1', ips: [] } as unknown as SandboxRecord;

type Snapshot = { pods: SandboxRecord[]; containers: ContainerRecord[] };

async function runtime(requestTimeoutMs = 1000, containers?: NriContainerControl, snapshot: () => Snapshot = () => ({ pods: [pod], containers: [] })): Promise<NriRuntime> {
  const socket = join(dir, `nri${count++}.sock`);
  const nri = new NriRuntime({
    socket,
    pluginDir: join(dir, 'none'),
    pluginConfigDir: join(dir, 'none'),
    registrationTimeoutMs: 300,
    requestTimeoutMs,
    runtimeVersion: 'test',
    log: createLogger('nri-test', 'fatal'),
    snapshot,
    containers,
  });
  await nri.listen();
  after(() => nri.close());
  return nri;
}

function socketOf(nri: NriRuntime): string {
  return (nri as unknown as { o: { socket: string } }).o.socket;
}

async function pluginConnection(nri: NriRuntime): Promise<NriConnection> {
  const socket = connect(socketOf(nri));
  await new Promise((resolve) => socket.once('connect', resolve));
  const connection = new NriConnection(socket, 'plugin');
  after(() => connection.close());
  return connection;
}

/** Until what a plugin call set off is done: a loaded machine takes seconds over a large Synchronize. */
function until(check: () => boolean): Promise<void> {
  return eventually('what the plugin call set off', async () => check());
}

test('the socket is root-only; a bad index, a bad name or a second registration is refused', async () => {
  const nri = await runtime();
  assert.equal(statSync(socketOf(nri)).mode & 0o777, 0o600);
  const plugin = await pluginConnection(nri);
  await assert.rejects(plugin.callRuntime('RegisterPlugin', { plugin_name: 'x', plugin_idx: '1' }, 1000), (err: TtrpcCallError) => err.code === TtrpcCode.InvalidArgument);
  await assert.rejects(plugin.callRuntime('RegisterPlugin', { plugin_name: '../x', plugin_idx: '10' }, 1000), /plugin name/);
  plugin.servePlugin('Configure', async () => ({ events: 1 }));
  plugin.servePlugin('Synchronize', async () => ({}));
  await plugin.callRuntime('RegisterPlugin', { plugin_name: 'x', plugin_idx: '10' }, 1000);
  await assert.rejects(plugin.callRuntime('RegisterPlugin', { plugin_name: 'y', plugin_idx: '11' }, 1000), /registered already/);
  await until(() => nri.pluginNames().includes('10-x'));
});

test('a connection that does not register in time is closed', async () => {
  const nri = await runtime();
  const plugin = await pluginConnection(nri);
  const closed = new Promise((resolve) => plugin.onClose(resolve));
  await closed;
  assert.deepEqual(nri.pluginNames(), []);
});

test('an event raised while a plugin synchronizes reaches it once it is synchronized', async () => {
  const nri = await runtime();
  const plugin = await pluginConnection(nri);
  const seen: string[] = [];
  let releaseSync: () => void = () => {};
  plugin.servePlugin('Configure', async () => ({ events: 1 << 0 }));
  plugin.servePlugin('Synchronize', async (request) => {
    seen.push(`sync ${request.pods.map((p) => p.name).join(',')}`);
    await new Promise<void>((resolve) => (releaseSync = resolve));
    return {};
  });
  plugin.servePlugin('RunPodSandbox', async (request) => {
    seen.push(`run ${request.pod?.name}`);
    return {};
  });
  await plugin.callRuntime('RegisterPlugin', { plugin_name: 'late', plugin_idx: '10' }, 1000);
  await until(() => seen.length === 1);
  assert.ok(nri.active);
  const event = nri.notifyPod('RunPodSandbox', pod);
  releaseSync();
  await event;
  assert.deepEqual(seen, ['sync web', 'run web']);
});

test('failure policies: a hung plugin is dropped and the request goes on, or fails it when it asked so', async () => {
  for (const failRequest of [false, true]) {
    const nri = await runtime(100);
    const plugin = await pluginConnection(nri);
    plugin.servePlugin('Configure', async () => ({ events: 1 << 3, failure_policy: { fail_request: failRequest } }));
    plugin.servePlugin('Synchronize', async () => ({}));
    plugin.servePlugin('CreateContainer', () => new Promise(() => {}));
    await plugin.callRuntime('RegisterPlugin', { plugin_name: 'hang', plugin_idx: '10' }, 1000);
    await until(() => nri.active && nri.pluginNames().length === 1);
    const adjusting = nri.adjustContainer(pod, { id: 'c1', name: 'app' });
    if (failRequest) await assert.rejects(adjusting, (err: Error & { code?: number }) => err.code === status.UNAVAILABLE && /"10-hang"/.test(err.message));
    else assert.equal((await adjusting).owners.size, 0);
    await until(() => nri.pluginNames().length === 0);
  }
});

test('a plugin error at CreateContainer fails it, naming the plugin', async () => {
  const nri = await runtime();
  const plugin = await pluginConnection(nri);
  plugin.servePlugin('Configure', async () => ({ events: 1 << 3 }));
  plugin.servePlugin('Synchronize', async () => ({}));
  plugin.servePlugin('CreateContainer', async () => {
    throw new Error('no GPU left');
  });
  await plugin.callRuntime('RegisterPlugin', { plugin_name: 'gpu', plugin_idx: '20' }, 1000);
  await until(() => nri.pluginNames().length === 1);
  await assert.rejects(nri.adjustContainer(pod, { id: 'c1', name: 'app' }), (err: Error & { code?: number }) => err.code === status.FAILED_PRECONDITION && /"20-gpu".*no GPU left/.test(err.message));
});

test('closing the runtime closes connections that have not registered yet', async () => {
  const nri = await runtime();
  const plugin = await pluginConnection(nri);
  const closed = new Promise((resolve) => plugin.onClose(resolve));
  await nri.close();
  await closed;
});

const container = (id: string): ContainerRecord =>
  ({ id, sandboxId: 'pod1', metadata: { name: id, attempt: 0 }, phase: 'running', labels: {}, annotations: {}, user: { uid: 0, gid: 0, supplementalGroups: [] }, image: { display: 'img', ref: 'img', id: 'sha256:1' } }) as unknown as ContainerRecord;

/** What the runtime asked of the containers, in order; `failing` ids fail, `blocked` ones never finish. */
function recordingControl(failing: string[] = [], blocked: string[] = []): NriContainerControl & { done: string[] } {
  const done: string[] = [];
  const act = async (what: string, id: string): Promise<void> => {
    if (blocked.includes(id)) await new Promise(() => {});
    if (failing.includes(id)) throw new Error(`container ${id} does not exist`);
    done.push(`${what} ${id}`);
  };
  return {
    done,
    update: (id, resources, plugin) => act(`update(${resources.memory?.limit?.value}) by ${plugin}`, id),
    evict: (id, reason, plugin) => act(`evict(${reason}) by ${plugin}`, id),
  };
}

async function registered(nri: NriRuntime, name: string, events: number, serve: (plugin: NriConnection) => void = () => {}): Promise<NriConnection> {
  const plugin = await pluginConnection(nri);
  plugin.servePlugin('Configure', async () => ({ events }));
  plugin.servePlugin('Synchronize', async () => ({}));
  serve(plugin);
  await plugin.callRuntime('RegisterPlugin', { plugin_name: name, plugin_idx: '10' }, 1000);
  await until(() => nri.pluginNames().includes(`10-${name}`));
  return plugin;
}

const memoryUpdate = (id: string, limit: number, ignore_failure = false) => ({ container_id: id, linux: { resources: { memory: { limit: { value: limit } } } }, ignore_failure });

test('UpdateContainers: updates and evictions are carried out in order; the failed ones come back unless ignored; too many are refused whole', async () => {
  const control = recordingControl(['gone', 'gone-too']);
  const nri = await runtime(1000, control);
  const plugin = await registered(nri, 'balancer', 1);
  const answer = await plugin.callRuntime('UpdateContainers', {
    update: [memoryUpdate('c1', 1000), memoryUpdate('gone', 2000), memoryUpdate('gone-too', 3000, true)],
    evict: [{ container_id: 'c2', reason: 'noisy' }, { container_id: 'gone', reason: 'noisy' }],
  }, 1000);
  assert.deepEqual(control.done, ['update(1000) by 10-balancer c1', 'evict(noisy) by 10-balancer c2']);
  assert.deepEqual(answer?.failed.map((f) => f.container_id), ['gone', 'gone']);
  const tooMany = Array.from({ length: MAX_CONTAINER_CHANGES + 1 }, (_, i) => memoryUpdate(`c${i}`, 1));
  await assert.rejects(plugin.callRuntime('UpdateContainers', { update: tooMany, evict: [] }, 1000), (err: TtrpcCallError) => err.code === TtrpcCode.InvalidArgument && /at most 64/.test(err.message));
  assert.equal(control.done.length, 2);
});

test("a plugin asking to change the container whose event it is answering is told it failed, not left waiting for the container's lock", async () => {
  const control = recordingControl([], ['c1']);
  const nri = await runtime(1000, control);
  const failed: string[] = [];
  await registered(nri, 'eager', 1 << 9, (plugin) =>
    plugin.servePlugin('StopContainer', async () => {
      const answer = await plugin.callRuntime('UpdateContainers', { update: [memoryUpdate('c1', 1000), memoryUpdate('c3', 3000)], evict: [] }, 1000);
      failed.push(...(answer?.failed ?? []).map((f) => f.container_id));
      return {};
    }),
  );
  await nri.notifyContainer('StopContainer', pod, container('c1'));
  assert.deepEqual(failed, ['c1']);
  assert.deepEqual(control.done, ['update(3000) by 10-eager c3']);
  assert.deepEqual(nri.pluginNames(), ['10-eager']);
});

test("an answer's updates and evictions are carried out after it; UpdateContainer is not sent to the plugin that asked for the update", async () => {
  const control = recordingControl();
  const nri = await runtime(1000, control);
  const told: string[] = [];
  await registered(nri, 'answering', (1 << 3) | (1 << 7), (plugin) => {
    plugin.servePlugin('CreateContainer', async () => ({ update: [memoryUpdate('c2', 4096)], evict: [{ container_id: 'c3', reason: 'room for c1' }] }));
    plugin.servePlugin('UpdateContainer', async (request) => {
      told.push(request.container?.id ?? '');
      return {};
    });
  });
  await nri.adjustContainer(pod, { id: 'c1', name: 'app' });
  await until(() => control.done.length === 2);
  assert.deepEqual(control.done, ['update(4096) by 10-answering c2', 'evict(room for c1) by 10-answering c3']);
  await nri.notifyContainer('UpdateContainer', pod, container('c2'), {}, '10-answering');
  await nri.notifyContainer('UpdateContainer', pod, container('c4'), {});
  assert.deepEqual(told, ['c4']);
});

/** `count` pods of about `bytes` of annotations each, and a container in each. */
function largeNode(count: number, bytes: number): Snapshot {
  const pods = Array.from({ length: count }, (_, i) => ({ ...pod, id: `pod${i}`, metadata: { ...pod.metadata, name: `web${i}` }, annotations: { blob: String(i % 10).repeat(bytes) } }) as unknown as SandboxRecord);
  const containers = pods.map((p, i) => ({ ...container(`c${i}`), sandboxId: p.id }) as unknown as ContainerRecord);
  return { pods, containers };
}

test('a Synchronize over the ttrpc limit goes in several requests, "more" on all but the last, and may take longer than registering; the last answer\'s updates are carried out', async () => {
  const control = recordingControl();
  const node = largeNode(12, 512 * 1024);
  const nri = await runtime(5000, control, () => node);
  const plugin = await pluginConnection(nri);
  const requests: { pods: string[]; containers: string[]; more: boolean }[] = [];
  plugin.servePlugin('Configure', async () => ({ events: 1 }));
  plugin.servePlugin('Synchronize', async (request) => {
    requests.push({ pods: request.pods.map((p) => p.name), containers: request.containers.map((c) => c.id), more: request.more });
    // Each request well within the request timeout, the whole past the registration timeout.
    await sleep(200);
    return request.more ? { more: true } : { update: [memoryUpdate('c3', 8192)] };
  });
  await plugin.callRuntime('RegisterPlugin', { plugin_name: 'collector', plugin_idx: '10' }, 1000);
  await until(() => nri.pluginNames().includes('10-collector'));
  assert.ok(requests.length >= 2, `${requests.length} requests`);
  assert.deepEqual(requests.map((r) => r.more), [...requests.slice(1).map(() => true), false]);
  assert.deepEqual(requests.flatMap((r) => r.pods), node.pods.map((p) => p.metadata.name));
  assert.deepEqual(requests.flatMap((r) => r.containers), node.containers.map((c) => c.id));
  await until(() => control.done.length === 1);
  assert.deepEqual(control.done, ['update(8192) by 10-collector c3']);
});

test('a plugin that answers a split Synchronize as if it were whole is disconnected; so is every plugin while a pod is too large to send', async () => {
  const nri = await runtime(5000, undefined, () => largeNode(12, 512 * 1024));
  const plugin = await pluginConnection(nri);
  const closed = new Promise((resolve) => plugin.onClose(resolve));
  plugin.servePlugin('Configure', async () => ({ events: 1 }));
  plugin.servePlugin('Synchronize', async () => ({}));
  await plugin.callRuntime('RegisterPlugin', { plugin_name: 'unsplit', plugin_idx: '10' }, 1000);
  await closed;
  assert.deepEqual(nri.pluginNames(), []);

  const huge = largeNode(1, 5 * 1024 * 1024);
  const refusing = await runtime(5000, undefined, () => huge);
  const second = await pluginConnection(refusing);
  const secondClosed = new Promise((resolve) => second.onClose(resolve));
  let synchronized = 0;
  second.servePlugin('Configure', async () => ({ events: 1 }));
  second.servePlugin('Synchronize', async () => {
    synchronized += 1;
    return {};
  });
  await second.callRuntime('RegisterPlugin', { plugin_name: 'late', plugin_idx: '10' }, 1000);
  await secondClosed;
  assert.equal(synchronized, 0);
  assert.deepEqual(refusing.pluginNames(), []);
});
