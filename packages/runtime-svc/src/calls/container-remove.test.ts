import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { status } from '@grpc/grpc-js';
import { criRequest, rejectsWithStatus, inUnitContext } from '../daemon/unit-context.js';
import { removeContainerCall } from './container-remove.js';

describe('RemoveContainer', () => {
  it('an empty id is InvalidArgument; an unknown one succeeds (removal is idempotent) and touches no other container', async () => {
    await inUnitContext(async (u) => {
      const pod = await u.addSandbox('ready');
      const other = await u.addContainer(pod, 'exited', { exitCode: 0 });
      await rejectsWithStatus(removeContainerCall(u.ctx, criRequest('RemoveContainer', {})), status.INVALID_ARGUMENT, /^RemoveContainer: container_id is required$/);
      assert.deepEqual(await removeContainerCall(u.ctx, criRequest('RemoveContainer', { container_id: 'f'.repeat(64) })), {});
      assert.equal(u.ctx.state.containers.get(other.id), other);
    });
  });
});
