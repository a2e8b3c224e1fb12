import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { status } from '@grpc/grpc-js';
import { criRequest, rejectsWithStatus, inUnitContext } from '../daemon/unit-context.js';
import { startContainerCall } from './container-start.js';

const start = (container_id: string) => criRequest<Parameters<typeof startContainerCall>[1]>('StartContainer', { container_id });

describe('StartContainer', () => {
  it('an empty id is InvalidArgument, an unknown one NotFound', async () => {
    await inUnitContext(async (u) => {
      await rejectsWithStatus(startContainerCall(u.ctx, start('')), status.INVALID_ARGUMENT, /^StartContainer: container_id is required$/);
      await rejectsWithStatus(startContainerCall(u.ctx, start('f'.repeat(64))), status.NOT_FOUND, /container f{64} does not exist/);
    });
  });

  it('only a created container starts: a running or exited one is FailedPrecondition naming its state, and stays as it was', async () => {
    await inUnitContext(async (u) => {
      const pod = await u.addSandbox('ready');
      const running = await u.addContainer(pod, 'running');
      const exited = await u.addContainer(pod, 'exited', { exitCode: 0, finishedAt: '1700000000000000001' });
      await rejectsWithStatus(startContainerCall(u.ctx, start(running.id)), status.FAILED_PRECONDITION, /is CONTAINER_RUNNING; only a created container can be started/);
      await rejectsWithStatus(startContainerCall(u.ctx, start(exited.id)), status.FAILED_PRECONDITION, /is CONTAINER_EXITED; only a created container can be started/);
      assert.deepEqual([running.phase, exited.phase], ['running', 'exited']);
    });
  });

  it('a created container whose sandbox is not ready, or that has a log file while journald is not running, is FailedPrecondition and stays created', async () => {
    await inUnitContext({ journald: false }, async (u) => {
      const stopped = await u.addSandbox('stopped');
      const inStopped = await u.addContainer(stopped, 'created', { pid: undefined });
      await rejectsWithStatus(startContainerCall(u.ctx, start(inStopped.id)), status.FAILED_PRECONDITION, new RegExp(`the pod sandbox ${stopped.id} of container ${inStopped.id} is not ready`));
      const ready = await u.addSandbox('ready');
      const logged = await u.addContainer(ready, 'created', { pid: undefined, logPath: '/var/log/pods/unit/app/0.log' });
      await rejectsWithStatus(startContainerCall(u.ctx, start(logged.id)), status.FAILED_PRECONDITION, /journald is not running/);
      assert.deepEqual([inStopped.phase, logged.phase], ['created', 'created']);
    });
  });

  it('a client gone before the launch leaves the container created (Cancelled)', async () => {
    await inUnitContext(async (u) => {
      const pod = await u.addSandbox('ready');
      const created = await u.addContainer(pod, 'created', { pid: undefined });
      await rejectsWithStatus(startContainerCall(u.ctx, start(created.id), AbortSignal.abort()), status.CANCELLED, /^StartContainer: the client went away/);
      assert.equal(created.phase, 'created');
    });
  });
});
