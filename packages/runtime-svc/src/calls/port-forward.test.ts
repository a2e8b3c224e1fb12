import { describe, it } from 'node:test';
import { status } from '@grpc/grpc-js';
import { criRequest, rejectsWithStatus, inUnitContext } from '../daemon/unit-context.js';
import { portForwardCall } from './port-forward.js';

const forward = (pod_sandbox_id: string) => criRequest<Parameters<typeof portForwardCall>[1]>('PortForward', { pod_sandbox_id, port: [8080] });

describe('PortForward', () => {
  it('an empty id is InvalidArgument, an unknown sandbox NotFound, one not ready FailedPrecondition', async () => {
    await inUnitContext(async (u) => {
      const stopped = await u.addSandbox('stopped');
      await rejectsWithStatus(portForwardCall(u.ctx, forward('')), status.INVALID_ARGUMENT, /^PortForward: pod_sandbox_id is required$/);
      await rejectsWithStatus(portForwardCall(u.ctx, forward('f'.repeat(64))), status.NOT_FOUND, /^PortForward: pod sandbox f{64} does not exist$/);
      await rejectsWithStatus(portForwardCall(u.ctx, forward(stopped.id)), status.FAILED_PRECONDITION, /^PortForward: pod sandbox .* is not ready$/);
    });
  });

  it('stream-svc not running is Unavailable, saying how to start it', async () => {
    await inUnitContext(async (u) => {
      const ready = await u.addSandbox('ready');
      await rejectsWithStatus(portForwardCall(u.ctx, forward(ready.id)), status.UNAVAILABLE, /^PortForward: stream-svc is not running \(nothing listens on .*\); start it/);
    });
  });
});
