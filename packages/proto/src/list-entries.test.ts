import { test } from 'node:test';
import assert from 'node:assert/strict';
import { containerListEncoder, imageListEncoder, imageServiceDefinition, loadCri, podSandboxListEncoder, runtimeServiceDefinition, type cri } from './index.js';

const loaded = loadCri().RuntimeService.service;

function container(n: number, extra: Partial<cri.Container> = {}): cri.Container {
  return {
    id: `${n}`.padStart(64, 'c'),
    pod_sandbox_id: 'p'.repeat(64),
    metadata: { name: `app-${n}`, attempt: n % 3 },
    image: { image: 'busybox', annotations: {}, user_specified_image: 'busybox', image_ref: 'sha256:1' },
    image_ref: 'sha256:1',
    state: (['CONTAINER_CREATED', 'CONTAINER_RUNNING', 'CONTAINER_EXITED', 'CONTAINER_UNKNOWN'] as const)[n % 4],
    created_at: `${1_700_000_000_000_000_000n + BigInt(n)}`,
    labels: n % 2 ? { app: 'web', n: `${n}` } : {},
    annotations: { note: 'ünïcødé ✓'.repeat(n % 5), empty: '' },
    image_id: 'sha256:1',
    ...extra,
  };
}

test('the registered list serializers are the encoders, the others are as loaded', () => {
  assert.equal(runtimeServiceDefinition.ListContainers.responseSerialize, containerListEncoder.serialize);
  assert.equal(runtimeServiceDefinition.ListPodSandbox.responseSerialize, podSandboxListEncoder.serialize);
  assert.equal(runtimeServiceDefinition.ListContainers.responseDeserialize, loaded.ListContainers.responseDeserialize);
  assert.equal(runtimeServiceDefinition.ContainerStatus.responseSerialize, loaded.ContainerStatus.responseSerialize);
});

test('sealed, unsealed and mixed lists encode to the ordinary bytes', () => {
  const plain = Array.from({ length: 40 }, (_, i) => container(i));
  const sealed = plain.map(containerListEncoder.seal);
  const mixed = plain.map((c, i) => (i % 3 ? sealed[i]! : c));
  const expected = loaded.ListContainers.responseSerialize({ containers: plain });
  for (const containers of [plain, sealed, mixed]) {
    const bytes = containerListEncoder.serialize({ containers });
    assert.ok(bytes.equals(expected));
    assert.deepEqual(loaded.ListContainers.responseDeserialize(bytes), loaded.ListContainers.responseDeserialize(expected));
  }
  for (const response of [{ containers: [] }, {}, { containers: [container(1, { labels: {}, annotations: {}, metadata: null })] }]) {
    assert.ok(containerListEncoder.serialize(response).equals(loaded.ListContainers.responseSerialize(response)));
  }
});

test('a sealed item is a deep-frozen copy; the item given stays as it was', () => {
  const item = container(1);
  const sealed = containerListEncoder.seal(item);
  assert.notEqual(sealed, item);
  assert.deepEqual(sealed, item);
  assert.ok(Object.isFrozen(sealed) && Object.isFrozen(sealed.labels) && Object.isFrozen(sealed.image) && Object.isFrozen(sealed.image?.annotations));
  assert.throws(() => {
    (sealed.labels as Record<string, string>)['x'] = 'y';
  }, TypeError);
  assert.equal(Object.isFrozen(item) || Object.isFrozen(item.labels), false);
  item.labels!['x'] = 'y';
  assert.ok(containerListEncoder.serialize({ containers: [item] }).equals(loaded.ListContainers.responseSerialize({ containers: [item] })));
});

test('ListPodSandbox entries likewise', () => {
  const items: cri.PodSandbox[] = Array.from({ length: 5 }, (_, i) => ({
    id: `${i}`.padStart(64, 's'),
    metadata: { name: `pod-${i}`, uid: `u${i}`, namespace: 'default', attempt: 0 },
    state: i % 2 ? 'SANDBOX_READY' : 'SANDBOX_NOTREADY',
    created_at: `${i + 1}`,
    labels: { app: `${i}` },
    annotations: {},
    runtime_handler: i % 2 ? 'runc' : '',
  }));
  const bytes = podSandboxListEncoder.serialize({ items: items.map((item, i) => (i % 2 ? podSandboxListEncoder.seal(item) : item)) });
  assert.ok(bytes.equals(loaded.ListPodSandbox.responseSerialize({ items })));
});

test('ListImages and ImageStatus responses of sealed images are the ordinary bytes', () => {
  const images = loadCri().ImageService.service;
  const plain = Array.from({ length: 12 }, (_, i): cri.Image => ({
    id: `sha256:${`${i}`.padStart(64, '0')}`,
    repo_tags: i % 2 ? [`registry.local/app:${i}`, 'registry.local/app:latest'] : [],
    repo_digests: [`registry.local/app@sha256:${'d'.repeat(64)}`],
    size: String(1_000_000 * i),
    username: i % 3 ? '' : 'nobody',
    spec: { image: `sha256:${i}`, annotations: i % 2 ? ({ 'org.opencontainers.image.title': 'ünï ✓' } as Record<string, string>) : {} },
    pinned: i % 4 === 0,
    ...(i % 3 ? { uid: { value: String(i * 1000) } } : {}),
  }));
  const sealed = plain.map(imageListEncoder.seal);
  const list = imageServiceDefinition.ListImages.responseSerialize;
  assert.ok(list({ images: sealed }).equals(images.ListImages.responseSerialize({ images: plain })));
  const status = imageServiceDefinition.ImageStatus.responseSerialize;
  for (const [i, image] of sealed.entries()) {
    assert.ok(status({ image }).equals(images.ImageStatus.responseSerialize({ image: plain[i]! })));
    assert.ok(status({ image, info: {} }).equals(images.ImageStatus.responseSerialize({ image: plain[i]!, info: {} })));
    const verbose = { image, info: { info: '{"id":"x"}' } };
    assert.ok(status(verbose).equals(images.ImageStatus.responseSerialize(verbose)));
  }
  for (const response of [{}, { image: null }, { images: [] }]) {
    assert.ok(status(response as cri.ImageStatusResponse).equals(images.ImageStatus.responseSerialize(response as cri.ImageStatusResponse)));
    assert.ok(list(response as cri.ListImagesResponse).equals(images.ListImages.responseSerialize(response as cri.ListImagesResponse)));
  }
});
