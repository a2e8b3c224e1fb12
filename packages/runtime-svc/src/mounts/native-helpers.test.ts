import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { promises as fs } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { runCommand } from '@skiff/common';
import { isRoot } from '@skiff/test-support';
import { NetnsManager } from '../cni/netns.js';
import { checkIdmappable, mountIdmappedOverlays } from './idmapped.js';
import { mountEntries, mountPoints } from './mountinfo.js';
import { detachMountsUnder, MountError, readonlyOverlay, writableOverlay } from './mounts.js';
import { KernelSupportError } from './native-helpers.js';

const HOST_ID = 0x50000000 + (process.pid % 1000) * 65536;
const MAPPINGS = { uid: { containerID: 0, hostID: HOST_ID, size: 65536 }, gid: { containerID: 0, hostID: HOST_ID, size: 65536 } };

async function processesMapping(hostId: number): Promise<string[]> {
  const found: string[] = [];
  for (const name of await fs.readdir('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    const map = await fs.readFile(`/proc/${name}/uid_map`, 'utf8').catch(() => '');
    if (map.trim().split(/\s+/).slice(0, 2).join(' ') === `0 ${hostId}`) found.push(name);
  }
  return found;
}

describe('the C helpers', { skip: !isRoot && 'needs root' }, () => {
  let dir: string;
  let netns: NetnsManager;

  before(async () => {
    dir = await fs.mkdtemp(join(tmpdir(), 'skiff-native-helpers-'));
    netns = new NetnsManager(join(dir, 'netns'));
  });

  after(async () => {
    for (const point of [...(await mountPoints())].filter((p) => p.startsWith(`${dir}/`)).sort((a, b) => b.length - a.length)) {
      await runCommand('umount', ['--lazy', point]);
    }
    await netns.releaseDir();
    await fs.rm(dir, { recursive: true, force: true });
  });

  it('pod-userns: a mapped user namespace owning a network namespace, both kept by bind mounts, no process left', async () => {
    const usernsFile = join(dir, 'userns');
    const path = await netns.createInUserNamespace('pod', usernsFile, MAPPINGS);
    assert.ok((await mountPoints()).has(usernsFile));
    assert.ok(await netns.exists('pod'));
    assert.deepEqual(await processesMapping(HOST_ID), []);
    const inside = await runCommand('nsenter', [`--user=${usernsFile}`, `--net=${path}`, 'sh', '-c', 'cat /proc/self/uid_map /proc/self/gid_map; readlink /proc/self/ns/net; ip -o addr show lo']);
    assert.equal(inside.code, 0, inside.stderr);
    const [uidMap, gidMap, net, loopback] = inside.stdout.trim().split('\n').map((l) => l.trim().split(/\s+/).join(' '));
    assert.match(loopback ?? '', /lo inet 127\.0\.0\.1\/8/, 'the namespace is made with lo up');
    assert.equal(uidMap, `0 ${HOST_ID} 65536`);
    assert.equal(gidMap, `0 ${HOST_ID} 65536`);
    assert.equal(net, `net:[${(await fs.stat(path)).ino}]`);

    // Overlays over id-mapped layers: a layer the host's root owns is root's inside, and the
    // host's mount table gains the overlays alone, no copy of the layer.
    const layer = join(dir, 'layer');
    await fs.mkdir(layer);
    await fs.writeFile(join(layer, 'file'), 'x');
    const [upper, work, rootfs, volume] = ['upper', 'work', 'rootfs', 'volume'].map((name) => join(dir, name)) as [string, string, string, string];
    for (const made of [upper, work, rootfs, volume]) await fs.mkdir(made);
    const mine = async (): Promise<string[]> => (await mountEntries()).filter((e) => e.point.startsWith(`${dir}/`) || e.root.startsWith(layer)).map((e) => e.point).sort();
    const expected = [...(await mine()), rootfs, volume].sort();
    const overlays = [await writableOverlay(rootfs, [layer], upper, work, join(dir, 'empty')), await readonlyOverlay(volume, [layer], join(dir, 'empty'))];
    await mountIdmappedOverlays(usernsFile, [layer, layer], overlays);
    assert.equal((await fs.stat(join(rootfs, 'file'))).uid, HOST_ID);
    assert.equal((await fs.stat(join(volume, 'file'))).uid, HOST_ID);
    assert.deepEqual(await mine(), expected);

    // A source that cannot be id-mapped is FailedPrecondition naming it; the check mounts nothing.
    await checkIdmappable(usernsFile, [layer, join(layer, 'file')]);
    await assert.rejects(checkIdmappable(usernsFile, [layer, '/proc']), (err: unknown) => err instanceof KernelSupportError && /cannot id-map the filesystem of \/proc/.test(err.message));
    assert.deepEqual(await mine(), expected);

    // All or nothing: an overlay that cannot be mounted leaves none of the others mounted.
    const second = join(dir, 'second');
    await fs.mkdir(second);
    const failing = [await readonlyOverlay(second, [layer], join(dir, 'empty')), await readonlyOverlay(join(dir, 'missing'), [layer], join(dir, 'empty'))];
    await assert.rejects(mountIdmappedOverlays(usernsFile, [layer], failing), (err: unknown) => err instanceof MountError && /missing/.test(err.message));
    assert.deepEqual(await mine(), expected);

    // Teardown detaches them by their own mount points.
    await detachMountsUnder(rootfs);
    await detachMountsUnder(volume);
    await netns.remove('pod');
    await runCommand('umount', [usernsFile]);
  });
});
