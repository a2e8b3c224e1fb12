import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { status } from '@grpc/grpc-js';
import { criRequest, rejectsWithStatus, inUnitContext } from '../daemon/unit-context.js';
import { NEVER_STARTED_EXIT_CODE } from '../container/container-stop-locked.js';
import { stopContainerCall } from './container-stop.js';

const stop = (container_id: string, timeout = 0) => criRequest<Parameters<typeof stopContainerCall>[1]>('StopContainer', { container_id, timeout });

describe('StopContainer', () => {
  it('an empty id is InvalidArgument; an unknown one succeeds (stopping is idempotent)', async () => {
    await inUnitContext(async (u) => {
      await rejectsWithStatus(stopContainerCall(u.ctx, stop('')), status.INVALID_ARGUMENT, /^StopContainer: container_id is required$/);
      assert.deepEqual(await stopContainerCall(u.ctx, stop('f'.repeat(64))), {});
    });
  });

  it('an exited container stays as it was, its exit code kept', async () => {
    await inUnitContext(async (u) => {
      const pod = await u.addSandbox('ready');
      const exited = await u.addContainer(pod, 'exited', { exitCode: 3, reason: 'Error', finishedAt: '1700000000000000001' });
      const before = JSON.stringify(exited);
      assert.deepEqual(await stopContainerCall(u.ctx, stop(exited.id, 10)), {});
      assert.equal(JSON.stringify(exited), before);
    });
  });

  it('a created container that never started becomes exited at once, as if killed, and a second stop changes nothing', async () => {
    await inUnitContext(async (u) => {
      const pod = await u.addSandbox('ready');
      const created = await u.addContainer(pod, 'created', { pid: undefined });
      await stopContainerCall(u.ctx, stop(created.id, 30));
      assert.deepEqual([created.phase, created.exitCode], ['exited', NEVER_STARTED_EXIT_CODE]);
      const after = JSON.stringify(created);
      await stopContainerCall(u.ctx, stop(created.id, 30));
      assert.equal(JSON.stringify(created), after);
    });
  });
});
