import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { promises as fs } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { runCommand } from '@skiff/common';
import { isRoot } from '@skiff/test-support';
import { mountEntries } from './mountinfo.js';
import { detachMountsUnder } from './mounts.js';

async function mount(args: string[]): Promise<void> {
  const result = await runCommand('mount', args, { timeoutMs: 10_000 });
  assert.equal(result.code, 0, result.stderr);
}

const pointsUnder = async (dir: string): Promise<string[]> => (await mountEntries()).filter((e) => e.point === dir || e.point.startsWith(`${dir}/`)).map((e) => e.point);

describe('detaching the mounts under a directory', { skip: !isRoot && 'needs root' }, () => {
  let base: string;

  before(async () => {
    base = await fs.mkdtemp(join(tmpdir(), 'skiff-detach-'));
  });

  after(async () => {
    for (const point of (await pointsUnder(base)).sort((a, b) => b.length - a.length)) await runCommand('umount', ['--lazy', point]);
    await fs.rm(base, { recursive: true, force: true });
  });

  it('takes nested, stacked and recursively bound mounts, and nothing a link below them points at', async () => {
    const dir = join(base, 'container');
    const decoy = join(base, 'decoy');
    const tree = join(base, 'tree');
    for (const d of [join(dir, 'nested'), join(dir, 'stacked'), join(dir, 'rro', '0'), decoy, join(tree, 'sub')]) await fs.mkdir(d, { recursive: true });
    await mount(['-t', 'tmpfs', 'skiff-test', decoy]);
    await mount(['-t', 'tmpfs', 'skiff-test', join(dir, 'nested')]);
    await fs.mkdir(join(dir, 'nested', 'inner'));
    await mount(['-t', 'tmpfs', 'skiff-test', join(dir, 'nested', 'inner')]);
    await fs.symlink(decoy, join(dir, 'nested', 'link'));
    await mount(['-t', 'tmpfs', 'skiff-test', join(dir, 'stacked')]);
    await mount(['-t', 'tmpfs', 'skiff-test', join(dir, 'stacked')]);
    // What earlier versions made of a recursive read-only volume: a recursive copy of a tree with a submount.
    await mount(['-t', 'tmpfs', 'skiff-test', join(tree, 'sub')]);
    await mount(['--rbind', tree, join(dir, 'rro', '0')]);
    assert.equal((await pointsUnder(dir)).length, 6);

    await detachMountsUnder(dir);
    assert.deepEqual(await pointsUnder(dir), []);
    assert.deepEqual((await pointsUnder(decoy)).length, 1, 'the mount a link points at stays');
    assert.deepEqual(await pointsUnder(tree), [join(tree, 'sub')], "the copied tree's own submount stays");
    await detachMountsUnder(dir);
  });
});
