import { describe, it } from 'node:test';
import { status } from '@grpc/grpc-js';
import { criRequest, rejectsWithStatus, inUnitContext } from '../daemon/unit-context.js';
import { reopenContainerLogCall } from './container-log-reopen.js';

const reopen = (container_id: string) => criRequest<Parameters<typeof reopenContainerLogCall>[1]>('ReopenContainerLog', { container_id });

describe('ReopenContainerLog', () => {
  it('an empty id is InvalidArgument, an unknown one NotFound', async () => {
    await inUnitContext(async (u) => {
      await rejectsWithStatus(reopenContainerLogCall(u.ctx, reopen('')), status.INVALID_ARGUMENT, /^ReopenContainerLog: container_id is required$/);
      await rejectsWithStatus(reopenContainerLogCall(u.ctx, reopen('f'.repeat(64))), status.NOT_FOUND, /does not exist/);
    });
  });

  it('a container that is not running, or has no log path, is FailedPrecondition saying which', async () => {
    await inUnitContext(async (u) => {
      const pod = await u.addSandbox('ready');
      const exited = await u.addContainer(pod, 'exited', { exitCode: 0, logPath: '/var/log/pods/unit/app/0.log' });
      const created = await u.addContainer(pod, 'created', { logPath: '/var/log/pods/unit/app/1.log' });
      const unlogged = await u.addContainer(pod, 'running');
      await rejectsWithStatus(reopenContainerLogCall(u.ctx, reopen(exited.id)), status.FAILED_PRECONDITION, /is CONTAINER_EXITED, not running/);
      await rejectsWithStatus(reopenContainerLogCall(u.ctx, reopen(created.id)), status.FAILED_PRECONDITION, /is CONTAINER_CREATED, not running/);
      await rejectsWithStatus(reopenContainerLogCall(u.ctx, reopen(unlogged.id)), status.FAILED_PRECONDITION, /has no log path/);
    });
  });
});
