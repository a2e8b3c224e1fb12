import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { status } from '@grpc/grpc-js';
import { criRequest, rejectsWithStatus, inUnitContext } from '../daemon/unit-context.js';
import { removePodSandboxCall } from './pod-sandbox-remove.js';

describe('RemovePodSandbox', () => {
  it('an empty id is InvalidArgument; an unknown one succeeds (removal is idempotent) and touches no other sandbox', async () => {
    await inUnitContext(async (u) => {
      const other = await u.addSandbox('stopped');
      await rejectsWithStatus(removePodSandboxCall(u.ctx, criRequest('RemovePodSandbox', {})), status.INVALID_ARGUMENT, /^RemovePodSandbox: pod_sandbox_id is required$/);
      assert.deepEqual(await removePodSandboxCall(u.ctx, criRequest('RemovePodSandbox', { pod_sandbox_id: 'f'.repeat(64) })), {});
      assert.equal(u.ctx.state.sandboxes.get(other.id), other);
      assert.equal(other.phase, 'stopped');
    });
  });
});
