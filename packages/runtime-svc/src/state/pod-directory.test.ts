import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { promises as fs } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { isRoot } from '@skiff/test-support';
import { letPodRootThrough } from './pod-directory.js';

const POD_GID = 0x40000000;

describe("a user-namespaced pod's directory", { skip: !isRoot && 'needs root' }, () => {
  let base: string;
  let root: string;

  before(async () => {
    base = await fs.mkdtemp(join(tmpdir(), 'skiff-pod-directory-'));
    root = join(base, 'root');
    await fs.mkdir(join(root, 'runtime', 'sandboxes', 'pod'), { recursive: true, mode: 0o700 });
  });

  after(async () => {
    await fs.rm(base, { recursive: true, force: true });
  });

  const modeOf = async (path: string): Promise<number> => (await fs.stat(path)).mode & 0o7777;

  it("is root's, its group the pod's root, 0710; its ancestors up to the root are traversable by all, what lies above untouched", async () => {
    const dir = join(root, 'runtime', 'sandboxes', 'pod');
    await letPodRootThrough(root, dir, POD_GID);
    const st = await fs.stat(dir);
    assert.deepEqual([st.uid, st.gid, st.mode & 0o7777], [0, POD_GID, 0o710]);
    for (const ancestor of [join(root, 'runtime', 'sandboxes'), join(root, 'runtime'), root]) assert.equal(await modeOf(ancestor), 0o711, ancestor);
    assert.equal(await modeOf(base), 0o700, 'outside the root: left alone');
  });

  it('refuses a directory outside the root, or the root itself', async () => {
    await assert.rejects(letPodRootThrough(root, base, POD_GID), /is not inside/);
    await assert.rejects(letPodRootThrough(root, root, POD_GID), /is not inside/);
  });
});
