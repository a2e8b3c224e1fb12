import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { criRequest, inUnitContext } from '../daemon/unit-context.js';
import { listContainersCall, streamContainersCall } from './container-list.js';

describe('ListContainers and StreamContainers', () => {
  it('filter by pod, state and id prefix, oldest first; a filter matching nothing is an empty list, not an error', async () => {
    await inUnitContext(async (u) => {
      const podA = await u.addSandbox('ready');
      const podB = await u.addSandbox('ready');
      const later = await u.addContainer(podA, 'running', { createdAt: '1700000000000000200' });
      const earlier = await u.addContainer(podA, 'exited', { createdAt: '1700000000000000100', exitCode: 0 });
      const other = await u.addContainer(podB, 'running', { createdAt: '1700000000000000050' });
      const ids = async (filter: object | undefined): Promise<string[]> => ((await listContainersCall(u.ctx, criRequest('ListContainers', filter ? { filter } : {}))).containers ?? []).map((c) => c.id ?? '');
      assert.deepEqual(await ids(undefined), [other.id, earlier.id, later.id]);
      assert.deepEqual(await ids({ pod_sandbox_id: podA.id }), [earlier.id, later.id]);
      assert.deepEqual(await ids({ state: { state: 'CONTAINER_RUNNING' } }), [other.id, later.id]);
      assert.deepEqual(await ids({ id: later.id.slice(0, 20) }), [later.id]);
      assert.deepEqual(await ids({ id: 'f'.repeat(64) }), []);
      const streamed = await streamContainersCall(u.ctx, criRequest('StreamContainers', { filter: { pod_sandbox_id: podA.id } }));
      assert.deepEqual(streamed.map((c) => c.id), [earlier.id, later.id]);
    });
  });
});
