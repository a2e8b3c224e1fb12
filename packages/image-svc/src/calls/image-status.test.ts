import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { status } from '@grpc/grpc-js';
import { StatusError } from '@skiff/common';
import type { cri } from '@skiff/proto';
import { imageRequest, withUnitStore } from '../unit-store.js';
import { imageStatusCall } from './image-status.js';

const statusOf = (image: string, verbose = false): cri.ImageStatusRequest__Output => imageRequest('ImageStatus', { image: { image }, verbose });

describe('ImageStatus', () => {
  it('an empty reference is InvalidArgument', async () => {
    await withUnitStore(async (u) => {
      await assert.rejects(imageStatusCall(u.store, statusOf('')), (err: unknown) => err instanceof StatusError && err.code === status.INVALID_ARGUMENT && err.message === 'ImageStatus: image.image is required');
    });
  });

  it('an image not in the store is an answer without an image, not an error', async () => {
    await withUnitStore(async (u) => {
      assert.deepEqual(await imageStatusCall(u.store, statusOf('registry.test/absent:1')), {});
    });
  });

  it('an image is found by tag and by id, with verbose info only when asked', async () => {
    await withUnitStore(async (u) => {
      const record = await u.addImage('registry.test/app:1');
      const byTag = await imageStatusCall(u.store, statusOf('registry.test/app:1'));
      assert.deepEqual([byTag.image?.id, byTag.image?.repo_tags, byTag.info], [record.id, ['registry.test/app:1'], undefined]);
      assert.equal((await imageStatusCall(u.store, statusOf(record.id))).image?.id, record.id);
      const verbose = await imageStatusCall(u.store, statusOf('registry.test/app:1', true));
      const info = JSON.parse(verbose.info?.['info'] ?? '{}') as { id?: string; imageSpec?: { os?: string } };
      assert.deepEqual([info.id, info.imageSpec?.os], [record.id, 'linux']);
    });
  });
});
