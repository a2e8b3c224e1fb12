import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { promises as fs } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { runCommand } from '@skiff/common';
import { isRoot } from '@skiff/test-support';
import { NetnsManager } from '../cni/netns.js';
import { IdmappedMounts } from './idmapped.js';
import { mountPoints } from './mountinfo.js';
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

    // The id-mapped copies of a directory the host's root owns: root's inside, and all or nothing.
    const source = join(dir, 'source');
    await fs.mkdir(source);
    await fs.writeFile(join(source, 'file'), 'x');
    const idmapped = new IdmappedMounts(usernsFile, join(dir, 'idmapped'));
    const target = idmapped.plan(source);
    await idmapped.make();
    assert.equal((await fs.stat(join(target, 'file'))).uid, HOST_ID);

    // procfs cannot be id-mapped: FailedPrecondition naming it, and the copy made before it is undone.
    const failing = new IdmappedMounts(usernsFile, join(dir, 'idmapped-failing'));
    const first = failing.plan(source);
    failing.plan('/proc');
    await assert.rejects(failing.make(), (err: unknown) => err instanceof KernelSupportError && /cannot id-map the filesystem of \/proc/.test(err.message));
    assert.ok(!(await mountPoints()).has(first), 'the first copy is unmounted again after the second failed');

    await netns.remove('pod');
    await runCommand('umount', [usernsFile]);
  });
});
