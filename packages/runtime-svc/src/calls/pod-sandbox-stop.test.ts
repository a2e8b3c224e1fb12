import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { status } from '@grpc/grpc-js';
import { criRequest, rejectsWithStatus, inUnitContext } from '../daemon/unit-context.js';
import { stopPodSandboxCall } from './pod-sandbox-stop.js';

describe('StopPodSandbox', () => {
  it('an empty id is InvalidArgument; an unknown one succeeds (stopping is idempotent)', async () => {
    await inUnitContext(async (u) => {
      await rejectsWithStatus(stopPodSandboxCall(u.ctx, criRequest('StopPodSandbox', {})), status.INVALID_ARGUMENT, /^StopPodSandbox: pod_sandbox_id is required$/);
      assert.deepEqual(await stopPodSandboxCall(u.ctx, criRequest('StopPodSandbox', { pod_sandbox_id: 'f'.repeat(64) })), {});
    });
  });
});
