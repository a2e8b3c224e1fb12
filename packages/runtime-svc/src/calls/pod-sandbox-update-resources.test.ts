import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { status } from '@grpc/grpc-js';
import { criRequest, rejectsWithStatus, inUnitContext } from '../daemon/unit-context.js';
import { updatePodSandboxResourcesCall } from './pod-sandbox-update-resources.js';

describe('UpdatePodSandboxResources', () => {
  it('an empty id is InvalidArgument, an unknown one NotFound; a known sandbox is answered and left as it was', async () => {
    await inUnitContext(async (u) => {
      await rejectsWithStatus(updatePodSandboxResourcesCall(u.ctx, criRequest('UpdatePodSandboxResources', {})), status.INVALID_ARGUMENT, /pod_sandbox_id is required/);
      await rejectsWithStatus(updatePodSandboxResourcesCall(u.ctx, criRequest('UpdatePodSandboxResources', { pod_sandbox_id: 'f'.repeat(64) })), status.NOT_FOUND, /does not exist/);
      const rec = await u.addSandbox('ready');
      const before = JSON.stringify(rec);
      assert.deepEqual(await updatePodSandboxResourcesCall(u.ctx, criRequest('UpdatePodSandboxResources', { pod_sandbox_id: rec.id, resources: { linux: { cpu_shares: 512 } } })), {});
      assert.equal(JSON.stringify(rec), before);
    });
  });
});
