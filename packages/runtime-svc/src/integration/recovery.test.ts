import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { promises as fs } from 'node:fs';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { callUnary } from '@skiff/proto';
import { isProcessAlive, runCommand } from '@skiff/common';
import type { ImageRecord } from '@skiff/image-store';
import { allocatedIps, containerConfig, exists, podConfig, TestDaemon, addBusyboxImage, isRoot } from '@skiff/test-support';
import { RUNTIME_MAIN } from './runtime-main.js';
import { NetnsManager } from '../cni/netns.js';
import { Runc } from '../oci/runc.js';
import { newId } from '../state/ids.js';
import { mountPoints } from '../mounts/mountinfo.js';

async function setPhase(file: string, phase: string): Promise<void> {
  const record = JSON.parse(await fs.readFile(file, 'utf8')) as { phase: string };
  record.phase = phase;
  await fs.writeFile(file, JSON.stringify(record));
}

describe('start-up recovery', { skip: !isRoot && 'needs root' }, () => {
  let d: TestDaemon;
  let image: ImageRecord;

  before(async () => {
    d = await TestDaemon.create({ entry: RUNTIME_MAIN, network: true });
    image = await addBusyboxImage(join(d.root, 'images'), 'docker.io/library/busybox:recovery');
    await d.start();
  });

  after(async () => {
    await d?.cleanup();
  });

  it('learns exits that happened while down and removes what a SIGKILL mid-operation left behind', async () => {
    const logs = join(d.base, 'logs');
    const podA = podConfig(logs);
    const sandbox = (await callUnary(d.client, 'RunPodSandbox', { config: podA })).pod_sandbox_id;
    const halfSandbox = (await callUnary(d.client, 'RunPodSandbox', { config: podConfig(logs) })).pod_sandbox_id;
    const make = async (name: string, command: string[], start: boolean): Promise<string> => {
      const id = (await callUnary(d.client, 'CreateContainer', { pod_sandbox_id: sandbox, config: containerConfig(name, image.id, { command }) })).container_id;
      if (start) await callUnary(d.client, 'StartContainer', { container_id: id });
      return id;
    };
    const long = await make('long', ['sleep', '3600'], true);
    const short = await make('short', ['sh', '-c', 'sleep 1; exit 7'], true);
    const half = await make('half', ['sleep', '3600'], false);
    const longPid = (JSON.parse((await callUnary(d.client, 'ContainerStatus', { container_id: long, verbose: true })).info['info'] ?? '{}') as { pid: number }).pid;
    const halfSandboxIp = (await callUnary(d.client, 'PodSandboxStatus', { pod_sandbox_id: halfSandbox })).status?.network?.ip;
    assert.ok(halfSandboxIp);

    await d.stop('SIGKILL');
    assert.ok(isProcessAlive(longPid), 'containers outlive the runtime service');

    // What a crash in the middle of RunPodSandbox / CreateContainer / a create's first step leaves.
    const runtimeDir = join(d.root, 'runtime');
    await setPhase(join(runtimeDir, 'sandboxes', halfSandbox, 'sandbox.json'), 'creating');
    await setPhase(join(runtimeDir, 'containers', half, 'container.json'), 'creating');
    const stray = join(runtimeDir, 'containers', newId());
    await fs.mkdir(join(stray, 'rootfs'), { recursive: true });
    await runCommand('mount', ['-t', 'tmpfs', 'tmpfs', join(stray, 'rootfs')], { timeoutMs: 10_000 });
    const netns = new NetnsManager(join(d.runDir, 'netns'));
    await netns.create('orphan-namespace');
    const strayExit = join(d.runDir, 'exits', newId());
    await fs.writeFile(strayExit, '0');
    await sleep(1500); // "short" exits meanwhile

    await d.start();
    const recovered = d.logEntries().filter((e) => e['msg'] === 'runtime state recovered').pop();
    assert.equal(recovered?.['exitedWhileDown'], 1);
    assert.equal(recovered?.['tornDown'], 3);
    assert.deepEqual(recovered?.['problems'], []);

    const sandboxes = (await callUnary(d.client, 'ListPodSandbox', {})).items ?? [];
    assert.deepEqual(sandboxes.map((s) => [s.id, s.state]), [[sandbox, 'SANDBOX_READY']]);
    assert.equal(await exists(join(runtimeDir, 'sandboxes', halfSandbox)), false);
    assert.ok(!(await allocatedIps(d.ipamDir)).includes(halfSandboxIp), 'the half-made sandbox released its address');
    assert.deepEqual((await netns.list()).map((e) => e.name), [sandbox]);

    const containers = new Map(((await callUnary(d.client, 'ListContainers', {})).containers ?? []).map((c) => [c.id, c.state]));
    assert.deepEqual([...containers.entries()].sort(), [
      [long, 'CONTAINER_RUNNING'],
      [short, 'CONTAINER_EXITED'],
    ].sort());
    const shortStatus = (await callUnary(d.client, 'ContainerStatus', { container_id: short })).status;
    assert.equal(shortStatus?.exit_code, 7);
    assert.equal(shortStatus?.reason, 'Error');
    assert.ok(BigInt(shortStatus?.finished_at ?? '0') > BigInt(shortStatus?.started_at ?? '0'));
    assert.equal((await callUnary(d.client, 'ExecSync', { container_id: long, cmd: ['echo', 'still here'], timeout: 5 })).stdout.toString(), 'still here\n');

    assert.equal(await exists(join(runtimeDir, 'containers', half)), false);
    assert.equal(await new Runc({ root: join(d.runDir, 'runc') }).stateIfExists(half), undefined);
    assert.equal(await exists(stray), false);
    assert.deepEqual([...(await mountPoints())].filter((m) => m.startsWith(runtimeDir) && !m.includes(sandbox) && !m.includes(long) && !m.includes(short)), []);
    assert.equal(await exists(strayExit), false);
    // The name the half-made container held is free again.
    const again = await make('half', ['true'], false);
    await callUnary(d.client, 'RemoveContainer', { container_id: again });

    // An orderly restart leaves running containers running.
    await d.stop('SIGTERM');
    await d.start();
    assert.equal((await callUnary(d.client, 'ContainerStatus', { container_id: long })).status?.state, 'CONTAINER_RUNNING');
    assert.ok(isProcessAlive(longPid));
  });
});
