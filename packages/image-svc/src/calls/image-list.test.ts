import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import type { cri } from '@skiff/proto';
import { imageRequest, withUnitStore } from '../unit-store.js';
import { listImagesCall, streamImagesCall } from './image-list.js';

const list = (image?: string): cri.ListImagesRequest__Output => imageRequest('ListImages', image === undefined ? {} : { filter: { image: { image } } });

describe('ListImages and StreamImages', () => {
  it('every image without a filter; with one, the image it names by tag or id, or none', async () => {
    await withUnitStore(async (u) => {
      assert.deepEqual(await listImagesCall(u.store, list()), { images: [] });
      const a = await u.addImage('registry.test/a:1');
      const b = await u.addImage('registry.test/b:1');
      assert.deepEqual(((await listImagesCall(u.store, list())).images ?? []).map((i) => i.id).sort(), [a.id, b.id].sort());
      assert.deepEqual(((await listImagesCall(u.store, list('registry.test/b:1'))).images ?? []).map((i) => i.id), [b.id]);
      assert.deepEqual(((await listImagesCall(u.store, list(a.id))).images ?? []).map((i) => i.id), [a.id]);
      assert.deepEqual(await listImagesCall(u.store, list('registry.test/none:1')), { images: [] });
      const streamed = await streamImagesCall(u.store, imageRequest('StreamImages', { filter: { image: { image: 'registry.test/a:1' } } }));
      assert.deepEqual(streamed.map((i) => i.id), [a.id]);
    });
  });
});
