import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { withUnitStore } from '../unit-store.js';
import { imageFsInfoCall } from './image-fs-info.js';

describe('ImageFsInfo', () => {
  it('one image filesystem, the store\'s root, with what it uses; no container filesystem of its own', async () => {
    await withUnitStore(async (u) => {
      await u.addImage('registry.test/app:1');
      const info = await imageFsInfoCall(u.store);
      assert.equal(info.image_filesystems?.length, 1);
      const [fs] = info.image_filesystems ?? [];
      assert.equal(fs?.fs_id?.mountpoint, u.store.root);
      assert.ok(Number(fs?.used_bytes?.value) > 0, `bytes used: ${fs?.used_bytes?.value}`);
      assert.ok(Number(fs?.inodes_used?.value) > 0, `inodes used: ${fs?.inodes_used?.value}`);
      assert.deepEqual(info.container_filesystems, []);
    });
  });
});
