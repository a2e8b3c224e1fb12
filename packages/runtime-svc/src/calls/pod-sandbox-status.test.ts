import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { status } from '@grpc/grpc-js';
import { criRequest, rejectsWithStatus, inUnitContext } from '../daemon/unit-context.js';
import { podSandboxStatusCall } from './pod-sandbox-status.js';

describe('PodSandboxStatus', () => {
  it('an empty id is InvalidArgument, an unknown one NotFound', async () => {
    await inUnitContext(async (u) => {
      await rejectsWithStatus(podSandboxStatusCall(u.ctx, criRequest('PodSandboxStatus', {})), status.INVALID_ARGUMENT, /pod_sandbox_id is required/);
      await rejectsWithStatus(podSandboxStatusCall(u.ctx, criRequest('PodSandboxStatus', { pod_sandbox_id: 'f'.repeat(64) })), status.NOT_FOUND, /pod sandbox f{64} does not exist/);
    });
  });

  it('ready while its pause process runs, not ready once stopped or once the pause is gone; found by a prefix of its id', async () => {
    await inUnitContext(async (u) => {
      const ready = await u.addSandbox('ready');
      const stopped = await u.addSandbox('stopped');
      const pauseGone = await u.addSandbox('ready', { pid: 0x7fffffff });
      const state = async (id: string): Promise<unknown> => (await podSandboxStatusCall(u.ctx, criRequest('PodSandboxStatus', { pod_sandbox_id: id }))).status?.state;
      assert.equal(await state(ready.id.slice(0, 20)), 'SANDBOX_READY');
      assert.equal(await state(stopped.id), 'SANDBOX_NOTREADY');
      assert.equal(await state(pauseGone.id), 'SANDBOX_NOTREADY');
    });
  });

  it('a pod without a pause is ready until stopped, with no pid, unless its namespaces were lost; verbose info says it has no pause', async () => {
    await inUnitContext(async (u) => {
      const ready = await u.addSandbox('ready', { pauseless: true, pid: undefined });
      const stopped = await u.addSandbox('stopped', { pauseless: true, pid: undefined });
      const lost = await u.addSandbox('ready', { pauseless: true, pid: undefined, namespacesLost: true });
      const answer = (id: string) => podSandboxStatusCall(u.ctx, criRequest('PodSandboxStatus', { pod_sandbox_id: id, verbose: true }));
      assert.equal((await answer(ready.id)).status?.state, 'SANDBOX_READY');
      assert.equal((await answer(stopped.id)).status?.state, 'SANDBOX_NOTREADY');
      assert.equal((await answer(lost.id)).status?.state, 'SANDBOX_NOTREADY');
      const info = JSON.parse((await answer(ready.id)).info?.['info'] ?? '{}') as { pause: boolean; pid: number };
      assert.deepEqual([info.pause, info.pid], [false, 0]);
      const withPause = await u.addSandbox('ready');
      assert.equal((JSON.parse((await answer(withPause.id)).info?.['info'] ?? '{}') as { pause: boolean }).pause, true);
    });
  });

  it('verbose info only when asked', async () => {
    await inUnitContext(async (u) => {
      const rec = await u.addSandbox('ready');
      assert.equal((await podSandboxStatusCall(u.ctx, criRequest('PodSandboxStatus', { pod_sandbox_id: rec.id }))).info, undefined);
      const info = (await podSandboxStatusCall(u.ctx, criRequest('PodSandboxStatus', { pod_sandbox_id: rec.id, verbose: true }))).info;
      assert.ok(info?.['info'], 'verbose info is given');
    });
  });
});
