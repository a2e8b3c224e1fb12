import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { status } from '@grpc/grpc-js';
import { createLogger, StatusError } from '@skiff/common';
import type { cri } from '@skiff/proto';
import { imageRequest, withUnitStore } from '../unit-store.js';
import { removeImageCall } from './image-remove.js';

const log = createLogger('image-svc', 'fatal');
const remove = (image: string): cri.RemoveImageRequest__Output => imageRequest('RemoveImage', { image: { image } });

describe('RemoveImage', () => {
  it('an empty reference is InvalidArgument', async () => {
    await withUnitStore(async (u) => {
      await assert.rejects(removeImageCall(u.store, log, remove('')), (err: unknown) => err instanceof StatusError && err.code === status.INVALID_ARGUMENT && err.message === 'RemoveImage: image.image is required');
    });
  });

  it('removes an image, and removing it again, or one never there, succeeds (the kubelet retries removals)', async () => {
    await withUnitStore(async (u) => {
      const kept = await u.addImage('registry.test/kept:1');
      await u.addImage('registry.test/gone:1');
      assert.deepEqual(await removeImageCall(u.store, log, remove('registry.test/gone:1')), {});
      assert.equal(await u.store.find('registry.test/gone:1'), undefined);
      assert.deepEqual(await removeImageCall(u.store, log, remove('registry.test/gone:1')), {});
      assert.deepEqual(await removeImageCall(u.store, log, remove('registry.test/never:1')), {});
      assert.equal((await u.store.find('registry.test/kept:1'))?.id, kept.id, 'another image stays');
    });
  });
});
