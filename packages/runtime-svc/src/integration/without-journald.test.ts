/**
 * A host without journald: conmon would have to write the CRI log file itself, opening its path
 * (and `<path>.tmp` on ReopenContainerLog) following symbolic links. Whoever can write the log
 * directory must not be able to turn that into a write of root's anywhere else.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { promises as fs } from 'node:fs';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { status } from '@grpc/grpc-js';
import type { ImageRecord } from '@skiff/image-store';
import { addBusyboxImage, containerConfig, isRoot, podConfig, TestDaemon } from '@skiff/test-support';
import { RUNTIME_MAIN } from './runtime-main.js';
import { callUnary, type cri } from '@skiff/proto';

const HOST_NETWORK: cri.PodSandboxConfig['linux'] = { security_context: { namespace_options: { network: 'NODE' } } };

describe('without journald', { skip: !isRoot && 'needs root' }, () => {
  let d: TestDaemon;
  let image: ImageRecord;

  before(async () => {
    d = await TestDaemon.create({ entry: RUNTIME_MAIN, withoutJournald: true });
    image = await addBusyboxImage(join(d.root, 'images'), 'docker.io/library/busybox:skiff-test', { Env: ['PATH=/bin'] });
    await d.start();
    const { info } = await callUnary(d.client, 'Status', { verbose: true });
    assert.equal((JSON.parse(info['config'] ?? '{}') as { journald?: boolean }).journald, false, 'the daemon found no journald');
  });

  after(async () => {
    await d?.cleanup();
  });

  async function runPod(logDirectory: string): Promise<{ id: string; config: cri.PodSandboxConfig }> {
    const config = podConfig(logDirectory, { linux: HOST_NETWORK });
    return { id: (await callUnary(d.client, 'RunPodSandbox', { config })).pod_sandbox_id, config };
  }

  /** Creates and starts a container that writes a line every 100 ms; answers the error that stopped it, if any. */
  async function runChatty(pod: { id: string; config: cri.PodSandboxConfig }, name: string, logPath: string): Promise<{ id?: string; err?: { code?: number; details?: string } }> {
    const config = containerConfig(name, image.id, { command: ['sh', '-c', 'while true; do echo written-by-the-container; sleep 0.1; done'], log_path: logPath });
    try {
      const { container_id: id } = await callUnary(d.client, 'CreateContainer', { pod_sandbox_id: pod.id, config, sandbox_config: pod.config });
      await callUnary(d.client, 'StartContainer', { container_id: id });
      return { id };
    } catch (err) {
      return { err: err as { code?: number; details?: string } };
    }
  }

  it('writes nothing through a link planted at the log file, at its .tmp or at a directory above it', async () => {
    const outside = join(d.base, 'outside');
    await fs.mkdir(outside);
    await fs.writeFile(join(outside, 'preload'), 'precious\n');
    await fs.writeFile(join(outside, 'tmp-target'), 'precious\n');
    const logs = join(d.base, 'logs');
    const logDir = join(logs, 'pod');
    await fs.mkdir(logDir, { recursive: true });
    await fs.symlink(join(outside, 'preload'), join(logDir, 'at-file.log'));
    await fs.symlink(join(outside, 'tmp-target'), join(logDir, 'rotated.log.tmp'));
    await fs.symlink(outside, join(logDir, 'linked'));
    await fs.symlink(outside, join(logs, 'linked-pods'));

    const pod = await runPod(logDir);
    const podUnderLink = await runPod(join(logs, 'linked-pods', 'pod'));
    const attempts = {
      'a link at the file': await runChatty(pod, 'at-file', 'at-file.log'),
      'a link at the .tmp a reopen writes': await runChatty(pod, 'rotated', 'rotated.log'),
      'a link at the container directory': await runChatty(pod, 'linked', 'linked/0.log'),
      'a link above the pod directory': await runChatty(podUnderLink, 'under-link', 'c/0.log'),
    };
    const rotated = attempts['a link at the .tmp a reopen writes'].id;
    if (rotated !== undefined) {
      await sleep(300);
      await fs.rename(join(logDir, 'rotated.log'), join(logDir, 'rotated.log.1'));
      await callUnary(d.client, 'ReopenContainerLog', { container_id: rotated }).catch(() => undefined);
    }
    // Time for output that was wrongly let through to be written.
    await sleep(1000);

    assert.equal(await fs.readFile(join(outside, 'preload'), 'utf8'), 'precious\n');
    assert.equal(await fs.readFile(join(outside, 'tmp-target'), 'utf8'), 'precious\n');
    assert.deepEqual((await fs.readdir(outside)).sort(), ['preload', 'tmp-target'], 'nothing was made outside the log directory');
    for (const [what, attempt] of Object.entries(attempts)) {
      assert.equal(attempt.err?.code, status.FAILED_PRECONDITION, `${what}: ${attempt.err?.details ?? 'the container ran'}`);
      assert.match(attempt.err?.details ?? '', /journald is not running/, what);
    }
  });

  it('runs a container without a log path: its output stays in the runtime\'s own directory', async () => {
    const pod = await runPod(join(d.base, 'logs', 'quiet'));
    const config = containerConfig('quiet', image.id, { command: ['sh', '-c', 'echo hello; sleep 3600'], log_path: '' });
    const { container_id: id } = await callUnary(d.client, 'CreateContainer', { pod_sandbox_id: pod.id, config, sandbox_config: pod.config });
    await callUnary(d.client, 'StartContainer', { container_id: id });
    const { status: running } = await callUnary(d.client, 'ContainerStatus', { container_id: id });
    assert.equal(running?.state, 'CONTAINER_RUNNING');
    const exec = await callUnary(d.client, 'ExecSync', { container_id: id, cmd: ['echo', 'exec works'], timeout: 10 });
    assert.equal(exec.stdout.toString(), 'exec works\n');
  });
});
