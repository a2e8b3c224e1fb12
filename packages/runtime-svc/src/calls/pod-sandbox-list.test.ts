import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { criRequest, inUnitContext } from '../daemon/unit-context.js';
import { listPodSandboxCall, streamPodSandboxesCall } from './pod-sandbox-list.js';

describe('ListPodSandbox and StreamPodSandboxes', () => {
  it('filter by state, labels and id prefix, oldest first; a filter matching nothing is an empty list', async () => {
    await inUnitContext(async (u) => {
      const ready = await u.addSandbox('ready', { createdAt: '1700000000000000200', labels: { app: 'web' } });
      const stopped = await u.addSandbox('stopped', { createdAt: '1700000000000000100', labels: { app: 'web' } });
      const pauseGone = await u.addSandbox('ready', { createdAt: '1700000000000000300', pid: 0x7fffffff });
      const ids = async (filter: object | undefined): Promise<string[]> => ((await listPodSandboxCall(u.ctx, criRequest('ListPodSandbox', filter ? { filter } : {}))).items ?? []).map((p) => p.id ?? '');
      assert.deepEqual(await ids(undefined), [stopped.id, ready.id, pauseGone.id]);
      assert.deepEqual(await ids({ state: { state: 'SANDBOX_READY' } }), [ready.id], 'a sandbox whose pause is gone is not ready');
      assert.deepEqual(await ids({ label_selector: { app: 'web' } }), [stopped.id, ready.id]);
      assert.deepEqual(await ids({ id: ready.id.slice(0, 20) }), [ready.id]);
      assert.deepEqual(await ids({ label_selector: { app: 'none' } }), []);
      const streamed = await streamPodSandboxesCall(u.ctx, criRequest('StreamPodSandboxes', { filter: { label_selector: { app: 'web' } } }));
      assert.deepEqual(streamed.map((p) => p.id), [stopped.id, ready.id]);
    });
  });
});
