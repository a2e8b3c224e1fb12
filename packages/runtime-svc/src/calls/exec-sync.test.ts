import { describe, it } from 'node:test';
import { status } from '@grpc/grpc-js';
import { criRequest, rejectsWithStatus, inUnitContext } from '../daemon/unit-context.js';
import { execSyncCall } from './exec-sync.js';

const execSync = (container_id: string, cmd: string[]) => criRequest<Parameters<typeof execSyncCall>[1]>('ExecSync', { container_id, cmd, timeout: 5 });

describe('ExecSync', () => {
  it('an empty id is InvalidArgument, an unknown one NotFound, an empty command InvalidArgument', async () => {
    await inUnitContext(async (u) => {
      const pod = await u.addSandbox('ready');
      const running = await u.addContainer(pod, 'running');
      await rejectsWithStatus(execSyncCall(u.ctx, execSync('', ['true'])), status.INVALID_ARGUMENT, /^ExecSync: container_id is required$/);
      await rejectsWithStatus(execSyncCall(u.ctx, execSync('f'.repeat(64), ['true'])), status.NOT_FOUND, /does not exist/);
      await rejectsWithStatus(execSyncCall(u.ctx, execSync(running.id, [])), status.INVALID_ARGUMENT, /^ExecSync: cmd is required$/);
    });
  });

  it('a container that is not running is FailedPrecondition naming its state', async () => {
    await inUnitContext(async (u) => {
      const pod = await u.addSandbox('ready');
      const exited = await u.addContainer(pod, 'exited', { exitCode: 0 });
      const created = await u.addContainer(pod, 'created');
      await rejectsWithStatus(execSyncCall(u.ctx, execSync(exited.id, ['true'])), status.FAILED_PRECONDITION, /is CONTAINER_EXITED; commands run only in a running container/);
      await rejectsWithStatus(execSyncCall(u.ctx, execSync(created.id, ['true'])), status.FAILED_PRECONDITION, /is CONTAINER_CREATED; commands run only in a running container/);
    });
  });
});
