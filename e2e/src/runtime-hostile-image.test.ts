/**
 * Images that try to hang or fool runtime-svc through the files it reads or mounts: a FIFO or a
 * device at /etc/passwd or /etc/group (read to resolve the image's user name), and a device node
 * an unprivileged container brings in its own layers.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { status } from '@grpc/grpc-js';
import { callUnary } from '@skiff/proto';
import { IMAGE_DEVICE_NODE } from './lib/image-catalogue.js';
import { rejectsWithCode } from './lib/grpc-assert.js';
import { gvisorCannot, startRuntimeHarness, type Pod, type RuntimeHarness } from './lib/runtime-harness.js';

let h: RuntimeHarness;
let pod: Pod;

before(async () => {
  h = await startRuntimeHarness({ images: ['busybox', 'fifo-passwd', 'device-group', 'device-node'] });
  pod = await h.runPod();
});

after(async () => {
  await h?.stop();
});

describe('an image whose /etc/passwd or /etc/group is not a regular file', () => {
  test('four containers with a FIFO at /etc/passwd are refused at once and leave nothing, while other calls are served', async () => {
    const before = await h.settledInventory();
    const creates = [1, 2, 3, 4].map((n) =>
      rejectsWithCode(
        h.createContainer(pod, `fifo-${n}`, { image: { image: h.imageRef('fifo-passwd') } }),
        status.INVALID_ARGUMENT,
        /\/etc\/passwd is not a regular file \(a FIFO\)/,
      ),
    );
    const meanwhile = h.runContainer(pod, 'beside-the-fifos');
    await Promise.all(creates);
    await meanwhile;
    const after = await h.settledInventory();
    assert.deepEqual(after.mounts.length, before.mounts.length + 1, 'only the healthy container mounted a root');
    assert.deepEqual(after.containerDirs.length, before.containerDirs.length + 1, 'no directory of a refused container is left');
  });

  test('a character device (/dev/zero) at /etc/group is refused without reading it', async () => {
    await rejectsWithCode(
      h.createContainer(pod, 'zero-group', { image: { image: h.imageRef('device-group') } }),
      status.INVALID_ARGUMENT,
      /\/etc\/group is not a regular file \(a character device\)/,
    );
  });
});

describe('a device node the image brings along', () => {
  const useDevice = `echo x > ${IMAGE_DEVICE_NODE.path} && echo opened`;
  const asRoot = { run_as_user: { value: 0 } };

  test('cannot be opened by an unprivileged container, with a writable or a read-only root', async () => {
    for (const readonly of [false, true]) {
      const id = await h.runContainer(pod, `devnode-${readonly ? 'ro' : 'rw'}`, {
        image: { image: h.imageRef('device-node') },
        linux: { security_context: { ...asRoot, readonly_rootfs: readonly } },
      });
      const opened = await h.exec(id, ['sh', '-c', useDevice]);
      assert.notEqual(opened.code, 0, `the image's device node opened (readonly root: ${readonly})`);
      assert.match(opened.stderr, /Permission denied/);
      const write = await h.exec(id, ['sh', '-c', 'touch /written-to-root']);
      if (readonly) assert.match(write.stderr, /Read-only file system/);
      else assert.equal(write.code, 0, write.stderr);
    }
  });

  test('opens in a privileged container', gvisorCannot("its kernel has its own /dev: a device node from the image, or a host device of a privileged container, is not passed through"), async () => {
    const privilegedPod = await h.runPod({ linux: { security_context: { privileged: true } } });
    for (const readonly of [false, true]) {
      const id = await h.runContainer(privilegedPod, `devnode-privileged-${readonly ? 'ro' : 'rw'}`, {
        image: { image: h.imageRef('device-node') },
        linux: { security_context: { ...asRoot, privileged: true, readonly_rootfs: readonly } },
      });
      const opened = await h.exec(id, ['sh', '-c', useDevice]);
      assert.equal(opened.stdout, 'opened\n', opened.stderr);
      if (readonly) assert.match((await h.exec(id, ['sh', '-c', 'touch /written-to-root'])).stderr, /Read-only file system/);
    }
    await callUnary(h.runtime, 'StopPodSandbox', { pod_sandbox_id: privilegedPod.id }, { timeoutMs: 60_000 });
  });
});
