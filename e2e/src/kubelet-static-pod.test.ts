/**
 * A kubelet with no API server (standalone) on Skiff: it runs a static pod from its manifest
 * directory and removes it with the manifest, and under image-filesystem pressure it garbage-collects
 * the images no container uses, through Skiff's RemoveImage, keeping the ones in use.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { callUnary } from '@skiff/proto';
import { pushTestImage } from './lib/image-catalogue.js';
import { startKubeNode, type KubeNode } from './lib/kube-node.js';
import { startRuntimeHarness, type RuntimeHarness } from './lib/runtime-harness.js';
import { until } from './lib/skiff-instance.js';

let h: RuntimeHarness;
let node: KubeNode;
const MANIFEST = 'static-web.json';
// The kubelet names a static pod after its node.
const selector = () => ({ 'io.kubernetes.pod.name': `static-web-${node.nodeName}` });

before(async () => {
  h = await startRuntimeHarness({ images: ['busybox'] });
  node = await startKubeNode(h.skiff, {
    standalone: true,
    // The image filesystem is always short of space: the eviction manager frees every unused image
    // each time it looks (static pods are critical and never evicted).
    evictionHard: 'imagefs.available: "99%"',
    // 0s would mean the default, two minutes.
    kubeletConfig: 'imageMinimumGCAge: 1s',
  });
});

after(async () => {
  await node?.stop();
  await h?.stop();
  await node?.removeCgroupRoot();
});

test('a static pod runs from its manifest', async () => {
  await writeFile(
    join(node.manifestsDir, MANIFEST),
    JSON.stringify({
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name: 'static-web', namespace: 'default' },
      spec: { containers: [{ name: 'app', image: h.imageRef('busybox'), imagePullPolicy: 'IfNotPresent', command: ['sh', '-c', 'echo static; exec sleep 3600'] }] },
    }),
  );
  const container = await until('the static pod\'s container to run', 120_000, async () => {
    const { containers } = await callUnary(h.runtime, 'ListContainers', { filter: { label_selector: selector(), state: { state: 'CONTAINER_RUNNING' } } }, { timeoutMs: 10_000 });
    return containers[0];
  });
  assert.equal(container.metadata?.name, 'app');
  assert.equal((await h.exec(container.id, ['cat', '/proc/1/cmdline'])).stdout.split('\0')[0], 'sleep');
});

test('image garbage collection by the kubelet removes an unused image and keeps the one in use', async () => {
  const unused = await pushTestImage(h.registry, 'multilayer');
  await callUnary(h.images, 'PullImage', { image: { image: unused.reference } }, { timeoutMs: 120_000 });
  await until('the kubelet to remove the unused image', 120_000, async () => {
    const { image } = await callUnary(h.images, 'ImageStatus', { image: { image: unused.reference } }, { timeoutMs: 10_000 });
    return image ? undefined : true;
  });
  const { image } = await callUnary(h.images, 'ImageStatus', { image: { image: h.imageRef('busybox') } }, { timeoutMs: 10_000 });
  assert.ok(image, 'the static pod\'s image is kept');
});

test('a static pod goes with its manifest', async () => {
  await rm(join(node.manifestsDir, MANIFEST));
  await until('the static pod to be removed', 120_000, async () => {
    const { items } = await callUnary(h.runtime, 'ListPodSandbox', { filter: { label_selector: selector(), state: { state: 'SANDBOX_READY' } } }, { timeoutMs: 10_000 });
    return items.length === 0 ? true : undefined;
  });
});
