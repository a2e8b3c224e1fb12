import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, statSync } from 'node:fs';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { status } from '@grpc/grpc-js';
import { createLogger } from '@skiff/common';
import { NriConnection, TtrpcCallError, TtrpcCode } from '@skiff/proto';
import type { SandboxRecord } from '../state/records.js';
import { NriRuntime } from './nri-runtime.js';

const dir = mkdtempSync(join(tmpdir(), 'nri-runtime-'));
after(() => rmSync(dir, { recursive: true, force: true }));
let count = 0;

const pod = { id: 'pod1', metadata: { name: 'web', uid: 'u1', namespace: 'default', attempt: 0 }, labels: {}, annotations: {}, runtimeHandler: '', cgroupParent: '/p', cgroupsPath: '/p/pod1', ips: [] } as unknown as SandboxRecord;

async function runtime(requestTimeoutMs = 1000): Promise<NriRuntime> {
  const socket = join(dir, `nri${count++}.sock`);
  const nri = new NriRuntime({
    socket,
    pluginDir: join(dir, 'none'),
    pluginConfigDir: join(dir, 'none'),
    registrationTimeoutMs: 300,
    requestTimeoutMs,
    runtimeVersion: 'test',
    log: createLogger('nri-test', 'fatal'),
    snapshot: () => ({ pods: [pod], containers: [] }),
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

async function until(check: () => boolean): Promise<void> {
  for (let i = 0; i < 200 && !check(); i++) await new Promise((r) => setTimeout(r, 10));
  assert.ok(check());
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
