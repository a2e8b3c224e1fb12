import { describe, it } from 'node:test';
import { status } from '@grpc/grpc-js';
import { criRequest, rejectsWithStatus, inUnitContext } from '../daemon/unit-context.js';
import { attachCall } from './attach.js';

const attach = (container_id: string, stdin = false) => criRequest<Parameters<typeof attachCall>[1]>('Attach', { container_id, stdin, stdout: true });

describe('Attach', () => {
  it('an empty id is InvalidArgument, an unknown one NotFound, one not running FailedPrecondition', async () => {
    await inUnitContext(async (u) => {
      const pod = await u.addSandbox('ready');
      const exited = await u.addContainer(pod, 'exited', { exitCode: 0 });
      await rejectsWithStatus(attachCall(u.ctx, attach('')), status.INVALID_ARGUMENT, /^Attach: container_id is required$/);
      await rejectsWithStatus(attachCall(u.ctx, attach('f'.repeat(64))), status.NOT_FOUND, /does not exist/);
      await rejectsWithStatus(attachCall(u.ctx, attach(exited.id)), status.FAILED_PRECONDITION, /is CONTAINER_EXITED; it must be running$/);
    });
  });

  it('stdin asked of a container created without it is FailedPrecondition', async () => {
    await inUnitContext(async (u) => {
      const pod = await u.addSandbox('ready');
      const running = await u.addContainer(pod, 'running', { stdin: false });
      await rejectsWithStatus(attachCall(u.ctx, attach(running.id, true)), status.FAILED_PRECONDITION, /was not created with stdin open \(stdin: true\), so there is no stdin to attach to/);
    });
  });

  it('stream-svc not running is Unavailable, saying how to start it', async () => {
    await inUnitContext(async (u) => {
      const pod = await u.addSandbox('ready');
      const running = await u.addContainer(pod, 'running', { stdin: true });
      await rejectsWithStatus(attachCall(u.ctx, attach(running.id, true)), status.UNAVAILABLE, /^Attach: stream-svc is not running \(nothing listens on .*\); start it/);
    });
  });
});
