import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { promises as fs } from 'node:fs';
import { status } from '@grpc/grpc-js';
import { criRequest, rejectsWithStatus, inUnitContext } from '../daemon/unit-context.js';
import type { ContainerRecord } from '../state/records.js';
import { updateContainerResourcesCall } from './container-update-resources.js';

const update = (container_id: string, linux?: object) => criRequest<Parameters<typeof updateContainerResourcesCall>[1]>('UpdateContainerResources', { container_id, ...(linux ? { linux } : {}) });

describe('UpdateContainerResources', () => {
  it('an empty id is InvalidArgument, an unknown one NotFound', async () => {
    await inUnitContext(async (u) => {
      await rejectsWithStatus(updateContainerResourcesCall(u.ctx, update('')), status.INVALID_ARGUMENT, /^UpdateContainerResources: container_id is required$/);
      await rejectsWithStatus(updateContainerResourcesCall(u.ctx, update('f'.repeat(64))), status.NOT_FOUND, /does not exist/);
    });
  });

  it('an exited container records the resources it is given (no runtime to tell), on disk too', async () => {
    await inUnitContext(async (u) => {
      const pod = await u.addSandbox('ready');
      const exited = await u.addContainer(pod, 'exited', { exitCode: 0 });
      await updateContainerResourcesCall(u.ctx, update(exited.id, { cpu_shares: 512, memory_limit_in_bytes: 64 * 1024 * 1024 }));
      assert.equal(exited.resources?.cpu_shares, '512');
      const saved = JSON.parse(await fs.readFile(u.ctx.paths.container(exited.id).record, 'utf8')) as ContainerRecord;
      assert.deepEqual(saved.resources, exited.resources);
    });
  });

  it('a request without linux resources changes nothing', async () => {
    await inUnitContext(async (u) => {
      const pod = await u.addSandbox('ready');
      const exited = await u.addContainer(pod, 'exited', { exitCode: 0 });
      const before = JSON.stringify(exited);
      await updateContainerResourcesCall(u.ctx, update(exited.id));
      assert.equal(JSON.stringify(exited), before);
    });
  });
});
