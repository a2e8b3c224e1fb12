import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { status } from '@grpc/grpc-js';
import { criRequest, rejectsWithStatus, inUnitContext } from '../daemon/unit-context.js';
import { containerStatusCall } from './container-status.js';

const statusOf = (container_id: string, verbose = false) => criRequest<Parameters<typeof containerStatusCall>[1]>('ContainerStatus', { container_id, verbose });

describe('ContainerStatus', () => {
  it('an empty id is InvalidArgument, an unknown one NotFound', async () => {
    await inUnitContext(async (u) => {
      await rejectsWithStatus(containerStatusCall(u.ctx, statusOf('')), status.INVALID_ARGUMENT, /^ContainerStatus: container_id is required$/);
      await rejectsWithStatus(containerStatusCall(u.ctx, statusOf('f'.repeat(64))), status.NOT_FOUND, /^ContainerStatus: container f{64} does not exist$/);
    });
  });

  it('reports an exited container\'s exit, finds a container by a prefix of its id, and gives verbose info only when asked', async () => {
    await inUnitContext(async (u) => {
      const pod = await u.addSandbox('ready');
      const exited = await u.addContainer(pod, 'exited', { exitCode: 3, reason: 'Error', finishedAt: '1700000000000000001' });
      const plain = await containerStatusCall(u.ctx, statusOf(exited.id.slice(0, 16)));
      assert.deepEqual([plain.status?.id, plain.status?.state, plain.status?.exit_code, plain.status?.reason], [exited.id, 'CONTAINER_EXITED', 3, 'Error']);
      assert.equal(plain.info, undefined);
      const verbose = await containerStatusCall(u.ctx, statusOf(exited.id, true));
      const info = JSON.parse(verbose.info?.['info'] ?? '{}') as { sandboxID?: string; pid?: number; runtimeSpec?: unknown };
      assert.deepEqual([info.sandboxID, info.pid, info.runtimeSpec], [pod.id, 0, null]);
    });
  });
});
