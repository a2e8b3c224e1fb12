import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { promises as fs } from 'node:fs';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { status } from '@grpc/grpc-js';
import type { ImageRecord } from '@skiff/image-store';
import { containerConfig, env, eventually, exists, podConfig, rejectsWith, TestDaemon, addBusyboxImage, isRoot } from '@skiff/test-support';
import { RUNTIME_MAIN } from './runtime-main.js';
import { callUnary, type cri } from '@skiff/proto';
import { journalMessage, readJournal } from '../journal/journald.js';
import { mountPoints } from '../mounts/mountinfo.js';

describe('containers', { skip: !isRoot && 'needs root' }, () => {
  let d: TestDaemon;
  let logs: string;
  let image: ImageRecord;
  let entrypointImage: ImageRecord;
  let bareImage: ImageRecord;
  let sandboxId: string;
  let sandboxConfig: cri.PodSandboxConfig;
  let hostDir: string;

  before(async () => {
    d = await TestDaemon.create({ entry: RUNTIME_MAIN, network: true });
    logs = join(d.base, 'logs');
    hostDir = join(d.base, 'host-data');
    await fs.mkdir(hostDir);
    await fs.writeFile(join(hostDir, 'greeting'), 'from the host\n');
    const images = join(d.root, 'images');
    image = await addBusyboxImage(images, 'docker.io/library/busybox:skiff-test', { Env: ['PATH=/bin', 'FROM_IMAGE=yes', 'OVERRIDE=image'], StopSignal: 'SIGUSR1' });
    entrypointImage = await addBusyboxImage(images, 'docker.io/library/entry:skiff-test', {
      Entrypoint: ['echo', 'entry'],
      Cmd: ['from-cmd'],
      WorkingDir: '/tmp',
      User: 'nobody',
    });
    bareImage = await addBusyboxImage(images, 'docker.io/library/bare:skiff-test', { Cmd: null });
    await d.start();
    sandboxConfig = podConfig(logs, { hostname: 'app-pod', dns_config: { servers: ['10.96.0.10'] } });
    sandboxId = (await callUnary(d.client, 'RunPodSandbox', { config: sandboxConfig })).pod_sandbox_id;
  });

  after(async () => {
    await d?.cleanup();
  });

  async function create(config: cri.ContainerConfig): Promise<string> {
    return (await callUnary(d.client, 'CreateContainer', { pod_sandbox_id: sandboxId, config, sandbox_config: sandboxConfig })).container_id;
  }

  async function run(config: cri.ContainerConfig): Promise<string> {
    const id = await create(config);
    await callUnary(d.client, 'StartContainer', { container_id: id });
    return id;
  }

  async function statusOf(id: string): Promise<cri.ContainerStatus__Output> {
    return (await callUnary(d.client, 'ContainerStatus', { container_id: id })).status!;
  }

  async function waitExited(id: string, timeoutMs = 10_000): Promise<cri.ContainerStatus__Output> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const s = await statusOf(id);
      if (s.state === 'CONTAINER_EXITED' || Date.now() > deadline) return s;
      await sleep(100);
    }
  }

  async function exec(id: string, cmd: string[], timeout = 10): Promise<{ code: number; out: string; err: string }> {
    const r = await callUnary(d.client, 'ExecSync', { container_id: id, cmd, timeout });
    return { code: r.exit_code, out: r.stdout.toString('utf8'), err: r.stderr.toString('utf8') };
  }

  it('creates, starts, execs in, stops and removes a container, reporting every status field', async () => {
    const created = BigInt(Date.now()) * 1_000_000n;
    const id = await create(
      containerConfig('main', image.id, {
        command: ['sh', '-c', 'echo "hello from $HOSTNAME"; echo oops >&2; trap "echo stopping; exit 3" USR1; while true; do sleep 0.1; done'],
        envs: env({ OVERRIDE: 'config', EXTRA: 'x y' }),
        labels: { app: 'main' },
        annotations: { note: 'kept' },
        mounts: [{ container_path: '/data', host_path: hostDir, readonly: true }],
        linux: { resources: { memory_limit_in_bytes: 64 * 1024 * 1024, cpu_shares: 512 } },
      }),
    );
    assert.match(id, /^[0-9a-f]{64}$/);
    let s = await statusOf(id);
    assert.equal(s.state, 'CONTAINER_CREATED');
    assert.equal(s.started_at, '0');
    assert.equal(s.stop_signal, 'SIGNAL_SIGUSR1', "the image's STOPSIGNAL, which StopContainer sends");
    const rootfs = join(d.root, 'runtime', 'containers', id, 'rootfs');
    assert.ok((await mountPoints()).has(rootfs), 'the rootfs is an overlay mount');

    await callUnary(d.client, 'StartContainer', { container_id: id });
    await rejectsWith(callUnary(d.client, 'StartContainer', { container_id: id }), status.FAILED_PRECONDITION, /CONTAINER_RUNNING/);
    s = await statusOf(id);
    assert.equal(s.state, 'CONTAINER_RUNNING');
    assert.ok(BigInt(s.created_at) >= created && BigInt(s.started_at) >= BigInt(s.created_at));
    assert.deepEqual(s.metadata, { name: 'main', attempt: 0 });
    assert.equal(s.image?.image, 'docker.io/library/busybox:skiff-test');
    assert.equal(s.image_id, image.id);
    assert.equal(s.image_ref, image.repoDigests[0]);
    assert.deepEqual(s.labels, { app: 'main' });
    assert.deepEqual(s.annotations, { note: 'kept' });
    assert.equal(s.log_path, join(logs, 'main/0.log'));
    assert.deepEqual(s.mounts.map((m) => [m.container_path, m.host_path, m.readonly]), [['/data', hostDir, true]]);
    assert.equal(s.resources?.linux?.memory_limit_in_bytes, String(64 * 1024 * 1024));
    assert.deepEqual(s.user?.linux, { uid: '0', gid: '0', supplemental_groups: ['0'] });

    const verbose = await callUnary(d.client, 'ContainerStatus', { container_id: id, verbose: true });
    const info = JSON.parse(verbose.info['info'] ?? '{}') as { pid: number; sandboxID: string };
    assert.equal(info.sandboxID, sandboxId);
    assert.ok(info.pid > 0);

    const e = await exec(id, ['sh', '-c', 'echo "$FROM_IMAGE $OVERRIDE $EXTRA"; cat /data/greeting; hostname; cat /etc/resolv.conf; grep -c " /dev/shm " /proc/mounts; echo to-stderr >&2; exit 4']);
    assert.equal(e.code, 4);
    assert.equal(e.out, 'yes config x y\nfrom the host\napp-pod\nnameserver 10.96.0.10\n1\n');
    assert.equal(e.err, 'to-stderr\n');
    assert.match((await exec(id, ['sh', '-c', 'touch /data/x 2>&1 || true'])).out, /Read-only file system/);
    assert.equal((await exec(id, ['cat', '/sys/fs/cgroup/memory/memory.limit_in_bytes'])).out.trim(), String(64 * 1024 * 1024));

    // Output reaches the CRI log file and the journal, tagged with the full id.
    let journal: string[] = [];
    await eventually('the last line reached the journal', async () => {
      journal = (await readJournal({ CONTAINER_ID_FULL: id })).map((entry) => journalMessage(entry).replace(/\0/g, '').trim());
      return journal.includes('oops');
    });
    assert.ok(journal.includes(`hello from app-pod`), journal.join('|'));
    assert.ok(journal.includes('oops'));
    const entries = await readJournal({ CONTAINER_ID_FULL: id });
    assert.equal(entries[0]!['CONTAINER_TAG'], id);
    const priorityOf = (text: string): unknown => entries.find((e) => journalMessage(e).trim() === text)?.['PRIORITY'];
    assert.equal(priorityOf('hello from app-pod'), '6', 'stdout has priority 6');
    assert.equal(priorityOf('oops'), '3', 'stderr has priority 3');
    // logs-svc writes the CRI file from the journal; it does not run here, so the file was made
    // empty for it to pick up when it starts.
    assert.equal((await fs.stat(join(logs, 'main/0.log'))).size, 0);

    // Reopening the log is logs-svc's work: without it the kubelet is told to retry.
    await fs.rename(join(logs, 'main/0.log'), join(logs, 'main/0.log.1'));
    await rejectsWith(callUnary(d.client, 'ReopenContainerLog', { container_id: id }), status.UNAVAILABLE, /logs-svc is not running/);
    await fs.rename(join(logs, 'main/0.log.1'), join(logs, 'main/0.log'));

    // Stop with the image's STOPSIGNAL (SIGUSR1, trapped: exit 3); twice.
    await callUnary(d.client, 'StopContainer', { container_id: id, timeout: 10 });
    await callUnary(d.client, 'StopContainer', { container_id: id, timeout: 10 });
    s = await statusOf(id);
    assert.equal(s.state, 'CONTAINER_EXITED');
    assert.equal(s.exit_code, 3);
    assert.equal(s.reason, 'Error');
    assert.ok(BigInt(s.finished_at) >= BigInt(s.started_at));
    assert.ok((await readJournal({ CONTAINER_ID_FULL: id })).some((e) => journalMessage(e).trim() === 'stopping'), 'the output up to the exit is in the journal');
    await rejectsWith(callUnary(d.client, 'ExecSync', { container_id: id, cmd: ['true'], timeout: 5 }), status.FAILED_PRECONDITION, /CONTAINER_EXITED/);

    const lease = join(d.root, 'images', 'leases', `${id}.json`);
    assert.deepEqual(JSON.parse(await fs.readFile(lease, 'utf8')).chainIds, image.layers.map((l) => l.chainId), 'the container holds a lease on its layers');
    await callUnary(d.client, 'RemoveContainer', { container_id: id });
    await callUnary(d.client, 'RemoveContainer', { container_id: id });
    // Answered once removed; the cleanup follows.
    await rejectsWith(callUnary(d.client, 'ContainerStatus', { container_id: id }), status.NOT_FOUND);
    assert.ok(!(await callUnary(d.client, 'ListContainers', {})).containers.some((c) => c.id === id), 'a removed container is not listed');
    await eventually('the removed container cleaned up', async () => !(await exists(join(d.root, 'runtime', 'containers', id))) && !(await exists(lease)));
    assert.equal(await exists(lease), false, 'removal releases the lease');
    assert.equal((await mountPoints()).has(rootfs), false);
  });

  it('applies Kubernetes command rules and resolves the user from the image', async () => {
    const fromImage = await run(containerConfig('entry-default', entrypointImage.id));
    const withArgs = await run(containerConfig('entry-args', entrypointImage.id, { args: ['given'] }));
    const withCommand = await run(containerConfig('entry-command', entrypointImage.id, { command: ['sh', '-c', 'echo "$(id -u):$(id -g) $(pwd)"'] }));
    const asUser = await run(
      containerConfig('as-user', image.id, {
        command: ['sh', '-c', 'echo "$(id -u):$(id -g) $(id -G)"'],
        linux: { security_context: { run_as_user: { value: 1000 }, run_as_group: { value: 2000 }, supplemental_groups: [3000] } },
      }),
    );
    for (const [id, want] of [
      [fromImage, 'entry from-cmd'],
      [withArgs, 'entry given'],
      [withCommand, '65534:65534 /tmp'],
      [asUser, '1000:2000 2000 3000'],
    ] as const) {
      const s = await waitExited(id);
      assert.equal(s.exit_code, 0);
      assert.equal(s.reason, 'Completed');
      assert.ok((await readJournal({ CONTAINER_ID_FULL: id })).some((e) => journalMessage(e) === `${want}\n` && e['PRIORITY'] === '6'), want);
    }
    assert.deepEqual((await statusOf(asUser)).user?.linux, { uid: '1000', gid: '2000', supplemental_groups: ['2000', '3000'] });
    await rejectsWith(
      create(containerConfig('ghost-user', image.id, { command: ['true'], linux: { security_context: { run_as_username: 'ghost' } } })),
      status.INVALID_ARGUMENT,
      /"ghost"/,
    );
    for (const id of [fromImage, withArgs, withCommand, asUser]) await callUnary(d.client, 'RemoveContainer', { container_id: id });
  });

  it('reports Error and OOMKilled exits, and kills what ignores the stop signal', async () => {
    const failing = await run(containerConfig('failing', image.id, { command: ['sh', '-c', 'exit 2'] }));
    const hungry = await run(
      containerConfig('hungry', image.id, { command: ['sh', '-c', 'tail /dev/zero'], linux: { resources: { memory_limit_in_bytes: 16 * 1024 * 1024 } } }),
    );
    const stubborn = await run(containerConfig('stubborn', image.id, { command: ['sh', '-c', 'trap "" USR1 TERM; while true; do sleep 0.1; done'] }));
    let s = await waitExited(failing);
    assert.deepEqual([s.exit_code, s.reason], [2, 'Error']);
    s = await waitExited(hungry, 20_000);
    assert.deepEqual([s.state, s.exit_code, s.reason], ['CONTAINER_EXITED', 137, 'OOMKilled']);
    const started = performance.now();
    await callUnary(d.client, 'StopContainer', { container_id: stubborn, timeout: 1 });
    assert.ok(performance.now() - started >= 1000);
    s = await statusOf(stubborn);
    assert.deepEqual([s.exit_code, s.reason], [137, 'Error']);
    for (const id of [failing, hungry, stubborn]) await callUnary(d.client, 'RemoveContainer', { container_id: id });
  });

  it('runs ExecSync with a timeout and caps its output', async () => {
    const id = await run(containerConfig('exec', image.id, { command: ['sleep', '3600'] }));
    await rejectsWith(callUnary(d.client, 'ExecSync', { container_id: id, cmd: ['sleep', '30'], timeout: 1 }), status.DEADLINE_EXCEEDED, /timed out after 1 s/);
    const big = await callUnary(d.client, 'ExecSync', { container_id: id, cmd: ['sh', '-c', 'head -c 17000000 /dev/zero | tr "\\0" a'], timeout: 60 });
    assert.equal(big.exit_code, 0);
    assert.ok(big.stdout.length > 16_000_000 && big.stdout.length + big.stderr.length < 16 * 1024 * 1024, 'cut to fit a 16 MiB reply');
    assert.match(big.stderr.toString(), /^\[skiff: output truncated/);
    assert.equal((await exec(id, ['sh', '-c', 'sleep 100 & echo started'])).out, 'started\n', 'a background child does not hold the call');
    const binary = await callUnary(d.client, 'ExecSync', { container_id: id, cmd: ['printf', '\\377\\376\\n'], timeout: 10 });
    assert.deepEqual([...binary.stdout], [0xff, 0xfe, 0x0a], 'output bytes pass through unchanged');
    await rejectsWith(callUnary(d.client, 'ExecSync', { container_id: id, cmd: [], timeout: 1 }), status.INVALID_ARGUMENT);
    // Removing a running container kills it.
    await callUnary(d.client, 'RemoveContainer', { container_id: id });
    await rejectsWith(callUnary(d.client, 'ContainerStatus', { container_id: id }), status.NOT_FOUND);
  });

  it('lists containers by sandbox, state and labels; refuses duplicates, unknown images and escaping log paths', async () => {
    const a = await run(containerConfig('list-a', image.id, { command: ['sleep', '3600'], labels: { set: 'list', which: 'a' } }));
    const b = await create(containerConfig('list-b', image.id, { command: ['true'], labels: { set: 'list', which: 'b' } }));
    try {
      const list = async (filter: cri.ContainerFilter): Promise<string[]> => ((await callUnary(d.client, 'ListContainers', { filter })).containers ?? []).map((c) => c.id);
      assert.deepEqual(await list({ label_selector: { set: 'list' } }), [a, b]);
      assert.deepEqual(await list({ label_selector: { set: 'list' }, state: { state: 'CONTAINER_RUNNING' } }), [a]);
      assert.deepEqual(await list({ label_selector: { set: 'list' }, state: { state: 'CONTAINER_CREATED' } }), [b]);
      assert.deepEqual(await list({ pod_sandbox_id: sandboxId, label_selector: { which: 'b' } }), [b]);
      assert.deepEqual(await list({ pod_sandbox_id: 'f'.repeat(64) }), []);
      assert.deepEqual(await list({ id: a.slice(0, 10) }), [a]);
      const listed = (await callUnary(d.client, 'ListContainers', { filter: { id: a } })).containers?.[0];
      assert.equal(listed?.pod_sandbox_id, sandboxId);
      assert.equal(listed?.image_id, image.id);

      await rejectsWith(create(containerConfig('list-a', image.id, { command: ['true'] })), status.ALREADY_EXISTS, new RegExp(a));
      await rejectsWith(create(containerConfig('no-image', 'docker.io/library/absent:1', { command: ['true'] })), status.NOT_FOUND, /absent/);
      await rejectsWith(create(containerConfig('escape', image.id, { command: ['true'], log_path: '../../escape.log' })), status.INVALID_ARGUMENT, /leaves/);
      await rejectsWith(create(containerConfig('no-command', bareImage.id)), status.INVALID_ARGUMENT, /no command/);
      await rejectsWith(create(containerConfig('privileged', image.id, { command: ['true'], linux: { security_context: { privileged: true } } })), status.INVALID_ARGUMENT, /privileged/);
      await rejectsWith(
        create(containerConfig('image-volume', image.id, { command: ['true'], mounts: [{ container_path: '/v', image: { image: image.id }, image_sub_path: '../etc' }] })),
        status.INVALID_ARGUMENT,
        /leaves the image/,
      );
      await rejectsWith(callUnary(d.client, 'CreateContainer', { pod_sandbox_id: 'f'.repeat(64), config: containerConfig('x', image.id) }), status.NOT_FOUND);
      const containers = await fs.readdir(join(d.root, 'runtime', 'containers'));
      assert.deepEqual(containers.sort(), [a, b].sort(), 'failed creates left nothing');
    } finally {
      for (const id of [a, b]) await callUnary(d.client, 'RemoveContainer', { container_id: id });
    }
  });

  it('reports container and pod statistics and applies resource updates', async () => {
    const id = await run(containerConfig('stats', image.id, { command: ['sh', '-c', 'dd if=/dev/zero of=/tmp/blob bs=1M count=4; sleep 3600'] }));
    try {
      await sleep(300);
      const first = (await callUnary(d.client, 'ContainerStats', { container_id: id })).stats!;
      assert.equal(first.attributes?.id, id);
      assert.ok(Number(first.cpu?.usage_core_nano_seconds?.value) > 0);
      assert.ok(Number(first.memory?.working_set_bytes?.value) > 0);
      assert.ok(Number(first.writable_layer?.used_bytes?.value) >= 4 * 1024 * 1024, 'the written file is in the writable layer');
      // A rate is measured over at least a second (stats/cpu-rate.ts).
      await sleep(1100);
      const listed = (await callUnary(d.client, 'ListContainerStats', { filter: { pod_sandbox_id: sandboxId } })).stats ?? [];
      assert.deepEqual(listed.map((s) => s.attributes?.id), [id]);
      assert.ok(listed[0]?.cpu?.usage_nano_cores, 'a second reading a second later gives a rate');

      const pod = (await callUnary(d.client, 'PodSandboxStats', { pod_sandbox_id: sandboxId })).stats!;
      assert.equal(pod.attributes?.id, sandboxId);
      assert.equal(pod.linux?.network?.default_interface?.name, 'eth0');
      // Every interface but lo, the default one too, as containerd lists them: the kubelet's summary
      // takes its pod's interface list from here alone.
      assert.deepEqual(pod.linux?.network?.interfaces.map((i) => i.name), ['eth0']);
      assert.ok(Number(pod.linux?.process?.process_count?.value) >= 2);
      assert.deepEqual(pod.linux?.containers.map((c) => c.attributes?.id), [id]);
      const pods = (await callUnary(d.client, 'ListPodSandboxStats', { filter: { id: sandboxId } })).stats ?? [];
      assert.equal(pods.length, 1);

      await callUnary(d.client, 'UpdateContainerResources', { container_id: id, linux: { memory_limit_in_bytes: 96 * 1024 * 1024, cpu_quota: 50_000, cpu_period: 100_000 } });
      assert.equal((await exec(id, ['cat', '/sys/fs/cgroup/memory/memory.limit_in_bytes'])).out.trim(), String(96 * 1024 * 1024));
      assert.equal((await exec(id, ['cat', '/sys/fs/cgroup/cpu/cpu.cfs_quota_us'])).out.trim(), '50000');
      assert.equal((await statusOf(id)).resources?.linux?.memory_limit_in_bytes, String(96 * 1024 * 1024));
    } finally {
      await callUnary(d.client, 'RemoveContainer', { container_id: id });
    }
  });

  it('stops and removes a sandbox with its containers', async () => {
    const config = podConfig(logs);
    const pod = (await callUnary(d.client, 'RunPodSandbox', { config })).pod_sandbox_id;
    const id = (await callUnary(d.client, 'CreateContainer', { pod_sandbox_id: pod, config: containerConfig('doomed', image.id, { command: ['sleep', '3600'] }) })).container_id;
    await callUnary(d.client, 'StartContainer', { container_id: id });
    await callUnary(d.client, 'StopPodSandbox', { pod_sandbox_id: pod });
    assert.equal((await statusOf(id)).state, 'CONTAINER_EXITED');
    await rejectsWith(
      callUnary(d.client, 'CreateContainer', { pod_sandbox_id: pod, config: containerConfig('late', image.id) }),
      status.FAILED_PRECONDITION,
      /not ready/,
    );
    await callUnary(d.client, 'RemovePodSandbox', { pod_sandbox_id: pod });
    await rejectsWith(callUnary(d.client, 'ContainerStatus', { container_id: id }), status.NOT_FOUND);
    await eventually('the removed pod cleaned up', async () => !(await exists(join(d.root, 'runtime', 'containers', id))) && !(await exists(join(d.root, 'runtime', 'sandboxes', pod))));
  });
});
