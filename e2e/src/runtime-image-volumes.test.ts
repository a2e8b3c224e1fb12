/**
 * Image volumes (a CRI Mount naming an image): the image's filesystem, or one directory of it,
 * read-only, nosuid and nodev (not noexec) in the container; the image's layers leased for as long as the container
 * lives, through a RemoveImage; every bad sub-path and a missing image refused.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { readdir } from 'node:fs/promises';
import { join } from 'node:path';
import { status } from '@grpc/grpc-js';
import { callUnary, type cri } from '@skiff/proto';
import { rejectsWithCode } from './lib/grpc-assert.js';
import { MULTILAYER } from './lib/image-catalogue.js';
import { startRuntimeHarness, UNDER_GVISOR, type Pod, type RuntimeHarness } from './lib/runtime-harness.js';
import { eventually } from './lib/stream-client.js';

let h: RuntimeHarness;
let pod: Pod;
let counter = 0;

before(async () => {
  h = await startRuntimeHarness({ images: ['busybox', 'multilayer'] });
  pod = await h.runPod();
});

after(async () => {
  await h?.stop();
});

function volume(subPath = '', image = h.imageRef('multilayer')): cri.Mount {
  return { container_path: '/vol', image: { image }, image_sub_path: subPath };
}

async function withVolume(mount: cri.Mount): Promise<string> {
  return h.runContainer(pod, `image-volume-${++counter}`, { mounts: [mount] });
}

async function sh(id: string, script: string): Promise<{ code: number; stdout: string; stderr: string }> {
  return h.exec(id, ['sh', '-c', script]);
}

async function leases(): Promise<string[]> {
  return (await readdir(join(h.skiff.root, 'images', 'leases'))).sort();
}

describe('image volumes', () => {
  test("the whole image, read-only, nosuid and nodev, its programs runnable, listed in ContainerStatus with its image", async () => {
    const id = await withVolume(volume());
    assert.equal((await sh(id, 'cat /vol/data/b')).stdout, MULTILAYER.files['/data/b']);
    assert.equal((await sh(id, 'cat /vol/opaque/new1')).stdout, MULTILAYER.files['/opaque/new1']);
    assert.match((await sh(id, 'touch /vol/written')).stderr, /Read-only file system/);
    // Not noexec: Kubernetes documents image volumes as read-only only, and critest runs a program of one.
    const run = await sh(id, `/vol${MULTILAYER.setuid.path}`);
    assert.deepEqual([run.code, run.stdout], [0, 'setuid\n'], run.stderr);
    // gVisor's /proc/self/mountinfo is its own kernel's mount table, without the options runsc gave
    // the bind (runtime-svc's README, "security settings checked from inside through /proc").
    if (!UNDER_GVISOR) {
      const options = (await sh(id, "awk '$5 == \"/vol\" { print $6 }' /proc/self/mountinfo")).stdout.trim().split(',');
      for (const option of ['ro', 'nosuid', 'nodev']) assert.ok(options.includes(option), `/vol is mounted ${options.join(',')}`);
      assert.ok(!options.includes('noexec'), `/vol is mounted ${options.join(',')}`);
    }
    const mounts = (await h.containerStatus(id)).mounts;
    assert.equal(mounts.length, 1);
    assert.equal(mounts[0]!.container_path, '/vol');
    assert.equal(mounts[0]!.image?.image, h.imageRef('multilayer'));
  });

  test('a sub-path mounts just that directory', async () => {
    const id = await withVolume(volume('data/dir'));
    assert.equal((await sh(id, 'cat /vol/x')).stdout, MULTILAYER.files['/data/dir/x']);
    assert.equal((await sh(id, 'ls /vol')).stdout, 'x\n');
  });

  test('a sub-path that leaves the image, passes a link, or is missing, and an absent image, are refused', async () => {
    const was = await h.settledInventory();
    await rejectsWithCode(h.createContainer(pod, `bad-${++counter}`, { mounts: [volume('data/../../etc')] }), status.INVALID_ARGUMENT, /leaves the image/);
    await rejectsWithCode(h.createContainer(pod, `bad-${++counter}`, { mounts: [volume('data/link-to-b')] }), status.INVALID_ARGUMENT, /symbolic link/);
    await rejectsWithCode(h.createContainer(pod, `bad-${++counter}`, { mounts: [volume('no/such/dir')] }), status.INVALID_ARGUMENT, /does not exist/);
    await rejectsWithCode(h.createContainer(pod, `bad-${++counter}`, { mounts: [volume('', 'registry.invalid/never/pulled:1')] }), status.NOT_FOUND, /never\/pulled/);
    const now = await h.settledInventory();
    assert.deepEqual([now.mounts, now.containerDirs], [was.mounts, was.containerDirs], 'nothing of a refused container stays');
  });

  test("the image's layers stay for the container through a RemoveImage, and go with it", async () => {
    const before = await leases();
    const id = await withVolume(volume('data'));
    assert.equal((await leases()).length, before.length + 2, 'the root filesystem and the volume are leased');
    await callUnary(h.images, 'RemoveImage', { image: { image: h.imageRef('multilayer') } }, { timeoutMs: 60_000 });
    assert.equal((await sh(id, 'cat /vol/b')).stdout, MULTILAYER.files['/data/b']);
    await rejectsWithCode(h.createContainer(pod, `after-remove-${++counter}`, { mounts: [volume('data')] }), status.NOT_FOUND);
    await callUnary(h.runtime, 'StopContainer', { container_id: id, timeout: 0 }, { timeoutMs: 60_000 });
    await callUnary(h.runtime, 'RemoveContainer', { container_id: id }, { timeoutMs: 60_000 });
    // RemoveContainer answers once the removal is recorded; the leases go with the cleanup after it.
    await eventually('the container\'s leases to be released', async () => JSON.stringify(await leases()) === JSON.stringify(before));
  });
});
