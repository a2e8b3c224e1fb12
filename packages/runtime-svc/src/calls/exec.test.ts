import { describe, it } from 'node:test';
import { promises as fs } from 'node:fs';
import { status } from '@grpc/grpc-js';
import { criRequest, rejectsWithStatus, inUnitContext } from '../daemon/unit-context.js';
import { execCall } from './exec.js';

const exec = (container_id: string, cmd: string[]) => criRequest<Parameters<typeof execCall>[1]>('Exec', { container_id, cmd, stdout: true });

describe('Exec', () => {
  it('an empty id is InvalidArgument, an unknown one NotFound, an empty command InvalidArgument', async () => {
    await inUnitContext(async (u) => {
      const pod = await u.addSandbox('ready');
      const running = await u.addContainer(pod, 'running');
      await rejectsWithStatus(execCall(u.ctx, exec('', ['sh'])), status.INVALID_ARGUMENT, /^Exec: container_id is required$/);
      await rejectsWithStatus(execCall(u.ctx, exec('f'.repeat(64), ['sh'])), status.NOT_FOUND, /does not exist/);
      await rejectsWithStatus(execCall(u.ctx, exec(running.id, [])), status.INVALID_ARGUMENT, /^Exec: cmd is required$/);
    });
  });

  it('a created container is FailedPrecondition saying to start it first; an exited one naming its state', async () => {
    await inUnitContext(async (u) => {
      const pod = await u.addSandbox('ready');
      const created = await u.addContainer(pod, 'created');
      const exited = await u.addContainer(pod, 'exited', { exitCode: 0 });
      await rejectsWithStatus(execCall(u.ctx, exec(created.id, ['sh'])), status.FAILED_PRECONDITION, /is CONTAINER_CREATED; it must be running \(start it with StartContainer first\)$/);
      await rejectsWithStatus(execCall(u.ctx, exec(exited.id, ['sh'])), status.FAILED_PRECONDITION, /is CONTAINER_EXITED; it must be running$/);
    });
  });

  it('stream-svc not running is Unavailable, saying how to start it', async () => {
    await inUnitContext(async (u) => {
      const pod = await u.addSandbox('ready');
      const running = await u.addContainer(pod, 'running');
      await fs.writeFile(u.ctx.paths.container(running.id).spec, JSON.stringify({ process: { args: ['sleep', '1'], cwd: '/', env: [] } }));
      await rejectsWithStatus(execCall(u.ctx, exec(running.id, ['sh'])), status.UNAVAILABLE, /^Exec: stream-svc is not running \(nothing listens on .*stream-internal\.sock\); start it/);
    });
  });
});
