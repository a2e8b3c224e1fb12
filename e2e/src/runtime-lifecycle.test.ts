import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readFileSync, statSync } from 'node:fs';
import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { status } from '@grpc/grpc-js';
import { callUnary, createRuntimeClient, type cri } from '@skiff/proto';
import { rejectsWithCode } from './lib/grpc-assert.js';
import { gvisorCannot, startRuntimeHarness, UNDER_GVISOR, type Pod, type RuntimeHarness } from './lib/runtime-harness.js';
import { eventually } from './lib/stream-client.js';
import { placesOf, type RuntimeInventory } from './lib/runtime-inventory.js';
import { hasExited } from './lib/process-exited.js';

let h: RuntimeHarness;

before(async () => {
  h = await startRuntimeHarness({ images: ['busybox'] });
});

after(async () => {
  await h?.stop();
});

async function listPods(filter: cri.PodSandboxFilter = {}): Promise<cri.PodSandbox__Output[]> {
  return (await callUnary(h.runtime, 'ListPodSandbox', { filter }, { timeoutMs: 10_000 })).items;
}

async function listContainers(filter: cri.ContainerFilter = {}): Promise<cri.Container__Output[]> {
  return (await callUnary(h.runtime, 'ListContainers', { filter }, { timeoutMs: 10_000 })).containers;
}

async function removePod(pod: Pod): Promise<void> {
  await callUnary(h.runtime, 'RemovePodSandbox', { pod_sandbox_id: pod.id }, { timeoutMs: 60_000 });
}

/** Runs a pod before the tests of the enclosing describe block (handed to `use` first) and removes it after them. */
function podForTheseTests(use: (pod: Pod) => void | Promise<void>): void {
  let pod: Pod | undefined;
  before(async () => {
    pod = await h.runPod();
    await use(pod);
  });
  after(async () => {
    if (pod) await removePod(pod);
  });
}

function emptyInventory(): RuntimeInventory {
  return { mounts: [], netns: [], runc: [], monitors: [], cgroups: [], ipOwners: {}, natRuleOwners: [], sandboxDirs: [], containerDirs: [], cniResults: [] };
}

describe('runtime service through skiff up', () => {
  test('Version and Status: a ready runtime on the default pod network skiff up installed', async () => {
    const version = await callUnary(h.runtime, 'Version', {});
    assert.equal(version.runtime_name, 'skiff');
    assert.equal(version.runtime_api_version, 'v1');
    assert.match(version.runtime_version, /^\d+\.\d+\.\d+/);

    const { status: runtimeStatus, info, runtime_handlers } = await callUnary(h.runtime, 'Status', { verbose: true });
    const conditions = Object.fromEntries((runtimeStatus?.conditions ?? []).map((c) => [c.type, c.status]));
    assert.deepEqual(conditions, { RuntimeReady: true, NetworkReady: true });
    assert.ok(runtime_handlers.some((r) => r.name === ''));
    const config = JSON.parse(info['config'] ?? '{}') as { cniConfigFile: string; runtime: { cgroup_parent: string } };
    assert.equal(config.cniConfigFile, join(h.skiff.dir, 'cni', '10-skiff.conflist'));
    assert.equal(config.runtime.cgroup_parent, h.cgroupParent);
    assert.equal(h.network.name, 'skiff');
  });

  test('a pod and its container from RunPodSandbox to RemovePodSandbox', async () => {
    const pod = await h.runPod({ labels: { suite: 'runtime-e2e', case: 'lifecycle' } });
    assert.match(pod.id, /^[0-9a-f]{64}$/);
    assert.deepEqual((await listPods({ id: pod.id })).map((p) => [p.id, p.state]), [[pod.id, 'SANDBOX_READY']]);
    assert.deepEqual((await listPods({ label_selector: { case: 'lifecycle' } })).map((p) => p.id), [pod.id]);
    assert.deepEqual(await listPods({ label_selector: { case: 'lifecycle' }, state: { state: 'SANDBOX_NOTREADY' } }), []);
    const ip = await h.podIp(pod);
    assert.match(ip, /^10\.88\.\d+\.\d+$/);

    const id = await h.createContainer(pod, 'main', {
      command: ['sh', '-c', 'trap "echo stopping; exit 3" TERM; echo "started as $(id -u) on $HOSTNAME"; while true; do sleep 0.2; done'],
      labels: { role: 'main' },
    });
    assert.equal((await h.containerStatus(id)).state, 'CONTAINER_CREATED');
    assert.deepEqual((await listContainers({ pod_sandbox_id: pod.id, state: { state: 'CONTAINER_CREATED' } })).map((c) => c.id), [id]);
    assert.deepEqual(await listContainers({ pod_sandbox_id: pod.id, state: { state: 'CONTAINER_RUNNING' } }), []);

    await callUnary(h.runtime, 'StartContainer', { container_id: id });
    const running = await callUnary(h.runtime, 'ContainerStatus', { container_id: id, verbose: true });
    assert.equal(running.status?.state, 'CONTAINER_RUNNING');
    assert.equal(running.status?.image?.image, h.imageRef('busybox'));
    assert.ok(BigInt(running.status!.started_at) >= BigInt(running.status!.created_at));
    const info = JSON.parse(running.info['info'] ?? '{}') as { pid: number; sandboxID: string };
    assert.equal(info.sandboxID, pod.id);
    assert.ok(info.pid > 0, 'the verbose info carries the container pid');
    // The pid is a real process on the host, in a cgroup under the configured parent. Under gVisor
    // it is the container's holder, and the container has no host cgroup of its own (runtime-svc's README).
    const cgroups = readFileSync(`/proc/${info.pid}/cgroup`, 'utf8');
    if (!UNDER_GVISOR) assert.match(cgroups, new RegExp(`:memory:${h.cgroupParent}/${id}\\n`));

    const listed = await listContainers({ id: id.slice(0, 12) });
    assert.deepEqual(listed.map((c) => [c.id, c.pod_sandbox_id, c.state, c.labels['role']]), [[id, pod.id, 'CONTAINER_RUNNING', 'main']]);
    assert.deepEqual((await listContainers({ label_selector: { role: 'main' } })).map((c) => c.id), [id]);

    const hostname = await h.exec(id, ['hostname']);
    assert.deepEqual(hostname, { code: 0, stdout: `${pod.config.hostname}\n`, stderr: '' });
    const failing = await h.exec(id, ['sh', '-c', 'echo out; echo err >&2; exit 4']);
    assert.deepEqual(failing, { code: 4, stdout: 'out\n', stderr: 'err\n' });
    const address = await h.exec(id, ['ip', '-o', '-4', 'addr', 'show', 'eth0']);
    assert.match(address.stdout, new RegExp(` ${ip.replace(/\./g, '\\.')}/16 `));

    await callUnary(h.runtime, 'StopContainer', { container_id: id, timeout: 10 });
    const stopped = await h.containerStatus(id);
    assert.deepEqual([stopped.state, stopped.exit_code, stopped.reason], ['CONTAINER_EXITED', 3, 'Error']);
    assert.ok(BigInt(stopped.finished_at) >= BigInt(stopped.started_at));
    const log = readFileSync(stopped.log_path, 'utf8');
    assert.match(log, new RegExp(`stdout F started as 0 on ${pod.config.hostname}\\n`));
    assert.match(log, /stdout F stopping\n/);
    assert.deepEqual((await listContainers({ state: { state: 'CONTAINER_EXITED' } })).map((c) => c.id), [id]);

    await callUnary(h.runtime, 'RemoveContainer', { container_id: id });
    await rejectsWithCode(callUnary(h.runtime, 'ContainerStatus', { container_id: id }), status.NOT_FOUND);
    assert.deepEqual(await listContainers({ pod_sandbox_id: pod.id }), []);

    await callUnary(h.runtime, 'StopPodSandbox', { pod_sandbox_id: pod.id });
    assert.equal((await h.podStatus(pod.id)).state, 'SANDBOX_NOTREADY');
    assert.deepEqual((await listPods({ state: { state: 'SANDBOX_NOTREADY' } })).map((p) => p.id), [pod.id]);
    assert.deepEqual(await listPods({ state: { state: 'SANDBOX_READY' } }), []);
    const afterStop = await h.settledInventory();
    assert.deepEqual(afterStop.netns, [], 'the network namespace goes with StopPodSandbox');
    assert.deepEqual(afterStop.ipOwners, {}, 'and so does the address');

    await removePod(pod);
    await rejectsWithCode(callUnary(h.runtime, 'PodSandboxStatus', { pod_sandbox_id: pod.id }), status.NOT_FOUND);
    assert.deepEqual(await listPods({ id: pod.id }), []);
    assert.deepEqual(await h.settledInventory(), emptyInventory(), 'nothing of the pod is left on the machine');
  });

  describe('exit codes and reasons', () => {
    let pod: Pod;
    podForTheseTests((p) => {
      pod = p;
    });

    test('0 is Completed, 1 is Error, SIGKILL is 137, a memory hog is OOMKilled', async () => {
      const ok = await h.runContainer(pod, 'exit-0', { command: ['true'] });
      const failed = await h.runContainer(pod, 'exit-1', { command: ['sh', '-c', 'exit 1'] });
      const killed = await h.runContainer(pod, 'killed', { command: ['sleep', '3600'] });
      // gVisor's kernel keeps no per-container memory limit: there the pod's cgroup bounds the sandbox,
      // and a pod over it is OOMKilled as a whole (runtime-svc's README, "Memory").
      const hogPod = UNDER_GVISOR ? await h.runPod({ linux: { cgroup_parent: await h.memoryBoundCgroupParent('lifecycle-oom', 160 * 1024 * 1024) } }) : pod;
      const hog = await h.runContainer(hogPod, 'hog', {
        command: ['sh', '-c', 'head -c 200m /dev/zero | tail'],
        linux: { resources: { memory_limit_in_bytes: 32 * 1024 * 1024 } },
      });
      const { info } = await callUnary(h.runtime, 'ContainerStatus', { container_id: killed, verbose: true });
      process.kill((JSON.parse(info['info']!) as { pid: number }).pid, 'SIGKILL');

      const outcome = async (id: string): Promise<[number, string]> => {
        const s = await h.waitForExit(id);
        return [s.exit_code, s.reason];
      };
      assert.deepEqual(await outcome(ok), [0, 'Completed']);
      assert.deepEqual(await outcome(failed), [1, 'Error']);
      assert.deepEqual(await outcome(killed), [137, 'Error']);
      if (UNDER_GVISOR) assert.equal((await h.waitForExit(hog, 60_000)).reason, 'OOMKilled');
      else assert.deepEqual(await outcome(hog), [137, 'OOMKilled']);
      const exited = (await listContainers({ pod_sandbox_id: pod.id, state: { state: 'CONTAINER_EXITED' } })).map((c) => c.id);
      assert.deepEqual(exited.sort(), (UNDER_GVISOR ? [ok, failed, killed] : [ok, failed, killed, hog]).sort());
      if (hogPod !== pod) await removePod(hogPod);
    });
  });

  describe('a created container has no process until StartContainer', () => {
    let pod: Pod;
    podForTheseTests((p) => {
      pod = p;
    });

    /** What the machine has of a container: its runc container and its monitor. */
    async function processesOf(id: string): Promise<{ runc: boolean; monitor: boolean }> {
      const inventory = await h.inventory();
      return { runc: inventory.runc.includes(id), monitor: inventory.monitors.some((m) => m.id === id) };
    }

    test('listed as created, its log file there; Attach and Exec refused; new limits taken at its start', async () => {
      const id = await h.createContainer(pod, 'not-yet', { command: ['sh', '-c', 'echo started; exec sleep 3600'], stdin: true });
      const created = await callUnary(h.runtime, 'ContainerStatus', { container_id: id, verbose: true });
      assert.equal(created.status?.state, 'CONTAINER_CREATED');
      assert.equal((JSON.parse(created.info['info'] ?? '{}') as { pid: number }).pid, 0, 'no pid before StartContainer');
      assert.ok(existsSync(created.status!.log_path), 'the log file exists from CreateContainer on');
      assert.deepEqual((await listContainers({ id, state: { state: 'CONTAINER_CREATED' } })).map((c) => c.id), [id]);
      assert.deepEqual(await processesOf(id), { runc: false, monitor: false });

      await rejectsWithCode(callUnary(h.runtime, 'Attach', { container_id: id, stdin: true, stdout: true }), status.FAILED_PRECONDITION, /CONTAINER_CREATED; it must be running \(start it with StartContainer first\)/);
      await rejectsWithCode(callUnary(h.runtime, 'Exec', { container_id: id, cmd: ['true'], stdout: true }), status.FAILED_PRECONDITION, /CONTAINER_CREATED/);

      await callUnary(h.runtime, 'UpdateContainerResources', { container_id: id, linux: { memory_limit_in_bytes: 64 * 1024 * 1024 } });
      await callUnary(h.runtime, 'StartContainer', { container_id: id });
      assert.equal((await h.containerStatus(id)).state, 'CONTAINER_RUNNING');
      assert.deepEqual(await processesOf(id), { runc: true, monitor: true });
      // gVisor keeps no per-container memory limit (runtime-svc's README): there the limit recorded is read.
      if (UNDER_GVISOR) assert.equal((await h.containerStatus(id)).resources?.linux?.memory_limit_in_bytes, String(64 * 1024 * 1024));
      else assert.equal((await h.exec(id, ['cat', '/sys/fs/cgroup/memory/memory.limit_in_bytes'])).stdout, `${64 * 1024 * 1024}\n`);
      const attach = await callUnary(h.runtime, 'Attach', { container_id: id, stdin: true, stdout: true });
      assert.match(attach.url, /attach/);
      await callUnary(h.runtime, 'StopContainer', { container_id: id, timeout: 0 });
      assert.match(readFileSync(created.status!.log_path, 'utf8'), /stdout F started\n/);
    });

    test('stopped and removed without ever starting: exited, then nothing is left', async () => {
      const id = await h.createContainer(pod, 'never');
      await callUnary(h.runtime, 'StopContainer', { container_id: id, timeout: 10 });
      const stopped = await h.containerStatus(id);
      assert.deepEqual([stopped.state, stopped.exit_code, stopped.started_at], ['CONTAINER_EXITED', 137, '0']);
      await rejectsWithCode(callUnary(h.runtime, 'StartContainer', { container_id: id }), status.FAILED_PRECONDITION, /CONTAINER_EXITED/);
      await callUnary(h.runtime, 'RemoveContainer', { container_id: id });
      const removedAtOnce = await h.createContainer(pod, 'never-removed');
      await callUnary(h.runtime, 'RemoveContainer', { container_id: removedAtOnce });
      const inventory = await h.settledInventory();
      for (const gone of [id, removedAtOnce]) assert.deepEqual(placesOf(inventory, gone), [], `nothing of ${gone} is left`);
    });

    test('a StartContainer that fails undoes what it made: exited with StartError, and RemoveContainer leaves nothing', async () => {
      const id = await h.createContainer(pod, 'bad-command', { command: ['/no/such/program'] });
      await rejectsWithCode(callUnary(h.runtime, 'StartContainer', { container_id: id }), status.INTERNAL, /could not be started: [^]*no\/such\/program/);
      const failed = await h.containerStatus(id);
      assert.deepEqual([failed.state, failed.reason], ['CONTAINER_EXITED', 'StartError']);
      assert.match(failed.message, /no\/such\/program/);
      assert.deepEqual(await processesOf(id), { runc: false, monitor: false });
      await rejectsWithCode(callUnary(h.runtime, 'StartContainer', { container_id: id }), status.FAILED_PRECONDITION, /CONTAINER_EXITED/);
      await callUnary(h.runtime, 'RemoveContainer', { container_id: id });
      assert.deepEqual(placesOf(await h.settledInventory(), id), []);
    });
  });

  describe('StopContainer ends every process of the container', () => {
    /** The container's processes, from its memory cgroup, once `count` of them run. */
    async function processesIn(id: string, count: number): Promise<number[]> {
      const procs = `/sys/fs/cgroup/memory/${h.cgroupParent}/${id}/cgroup.procs`;
      for (let i = 0; i < 200; i++) {
        const pids = readFileSync(procs, 'utf8').split('\n').filter(Boolean).map(Number);
        if (pids.length >= count) return pids;
        await new Promise((resolve) => setTimeout(resolve, 25));
      }
      throw new Error(`container ${id} never had ${count} processes`);
    }

    /** Under gVisor: the container's `sleep 1000`s as a container beside it in the pod's PID namespace sees them. */
    async function sleepsSeenBy(observer: string): Promise<string[]> {
      return (await h.exec(observer, ['ps', '-o', 'args'])).stdout.split('\n').filter((line) => line === 'sleep 1000');
    }

    for (const pid of ['CONTAINER', 'POD'] as const) {
      // Under gVisor a container's processes are the sandbox kernel's, with no host pid or cgroup of
      // their own: only a container in the same PID namespace sees them.
      const options = pid === 'CONTAINER' ? gvisorCannot("a container's processes run inside the sandbox, with no host process or cgroup of their own (its pid is its holder's), and in a PID namespace of its own no other container sees them") : {};
      test(`in a PID namespace of ${pid === 'CONTAINER' ? 'its own' : "the pod's"}, with timeout 0`, options, async () => {
        const security = { linux: { security_context: { namespace_options: { pid } } } };
        const pod = await h.runPod(security);
        try {
          const observer = UNDER_GVISOR ? await h.runContainer(pod, 'observer', security) : undefined;
          const id = await h.createContainer(pod, 'forks', { ...security, command: ['sh', '-c', 'sleep 1000 & sleep 1000 & wait'] });
          await callUnary(h.runtime, 'StartContainer', { container_id: id });
          if (observer !== undefined) await eventually('both sleeps running', async () => (await sleepsSeenBy(observer)).length === 2);
          const pids = observer === undefined ? await processesIn(id, 3) : [];
          await callUnary(h.runtime, 'StopContainer', { container_id: id, timeout: 0 });
          assert.equal((await h.containerStatus(id)).exit_code, 137);
          assert.deepEqual(pids.filter((pid) => !hasExited(pid)), [], 'no process of it is left');
          if (observer !== undefined) assert.deepEqual(await sleepsSeenBy(observer), [], 'no process of it is left in the sandbox');
        } finally {
          await removePod(pod);
        }
      });
    }
  });

  describe('ExecSync timeouts and output size', () => {
    let pod: Pod;
    let id: string;
    podForTheseTests(async (p) => {
      pod = p;
      id = await h.runContainer(pod, 'exec');
    });

    test('a background process holding stdout does not hold the call', async () => {
      const started = Date.now();
      const result = await h.exec(id, ['sh', '-c', 'sleep 60 & echo hi'], 30);
      assert.deepEqual(result, { code: 0, stdout: 'hi\n', stderr: '' });
      assert.ok(Date.now() - started < 20_000, `took ${Date.now() - started} ms`);
    });

    test('a command past its timeout gives DeadlineExceeded on time', async () => {
      const started = performance.now();
      await rejectsWithCode(
        callUnary(h.runtime, 'ExecSync', { container_id: id, cmd: ['sleep', '61'], timeout: 1 }, { timeoutMs: 30_000 }),
        status.DEADLINE_EXCEEDED,
        /timed out after 1 s/,
      );
      const took = Math.round(performance.now() - started);
      assert.ok(took >= 1000 && took < 20_000, `took ${took} ms`);
      // The container is unharmed and the timed-out command is gone.
      const ps = await h.exec(id, ['ps', '-o', 'args']);
      assert.doesNotMatch(ps.stdout, /sleep 61/);
    });

    test("a timeout longer than a Node timer holds (30 days) waits for the command instead of firing at once", async () => {
      const thirtyDays = 30 * 24 * 3600;
      const response = await callUnary(h.runtime, 'ExecSync', { container_id: id, cmd: ['sh', '-c', 'sleep 1; echo done'], timeout: thirtyDays }, { timeoutMs: 30_000 });
      assert.deepEqual([response.exit_code, response.stdout.toString(), response.stderr.toString()], [0, 'done\n', '']);
    });

    test("more output than a 16 MiB message holds comes back cut to fit, through a client with the kubelet's and crictl's limit", async () => {
      const kubeletLike = createRuntimeClient(h.skiff.runtimeSocket, { 'grpc.max_receive_message_length': 16 * 1024 * 1024 });
      try {
        const cmd = ['sh', '-c', 'echo starting >&2; head -c 20000000 /dev/zero | tr "\\0" a; echo done >&2'];
        const response = await callUnary(kubeletLike, 'ExecSync', { container_id: id, cmd, timeout: 60 }, { timeoutMs: 90_000 });
        assert.equal(response.exit_code, 0);
        const stderr = response.stderr.toString();
        assert.match(stderr, /^starting\ndone\n\[skiff: output truncated: an ExecSync reply carries at most \d+ bytes of stdout and stderr together; the rest was dropped\]\n$/);
        assert.ok(response.stdout.length > 16_000_000, `stdout keeps what fits (${response.stdout.length} bytes)`);
        assert.ok(response.stdout.every((b) => b === 0x61), 'stdout is the command\'s own output, cut');
        assert.ok(response.stdout.length + response.stderr.length < 16 * 1024 * 1024);

        // Short lines fill conmon's log (whose line prefixes count) long before the reply: still said.
        const lines = await callUnary(kubeletLike, 'ExecSync', { container_id: id, cmd: ['sh', '-c', 'yes | head -c 40000000'], timeout: 60 }, { timeoutMs: 90_000 });
        assert.equal(lines.exit_code, 0);
        assert.match(lines.stderr.toString(), /^\[skiff: output truncated/);
        assert.ok(lines.stdout.length < 40_000_000 && lines.stdout.toString().startsWith('y\ny\n'));

        const small = await callUnary(kubeletLike, 'ExecSync', { container_id: id, cmd: ['sh', '-c', 'echo out; echo err >&2'], timeout: 10 });
        assert.deepEqual([small.stdout.toString(), small.stderr.toString()], ['out\n', 'err\n'], 'output that fits is untouched');
      } finally {
        kubeletLike.close();
      }
    });
  });

  describe('names', () => {
    test('the same sandbox metadata twice: AlreadyExists naming the holder, free again after removal', async () => {
      const pod = await h.runPod();
      const again = { config: { ...pod.config, log_directory: join(h.logDir, 'again') } };
      await rejectsWithCode(callUnary(h.runtime, 'RunPodSandbox', again), status.ALREADY_EXISTS, new RegExp(pod.id));
      assert.deepEqual((await h.settledInventory()).sandboxDirs, [pod.id]);
      await removePod(pod);
      const second = await callUnary(h.runtime, 'RunPodSandbox', again, { timeoutMs: 60_000 });
      await removePod({ id: second.pod_sandbox_id, config: again.config });
    });

    test('the same container name twice in a pod: AlreadyExists naming the holder', async () => {
      const pod = await h.runPod();
      try {
        const first = await h.createContainer(pod, 'twin');
        await rejectsWithCode(h.createContainer(pod, 'twin'), status.ALREADY_EXISTS, new RegExp(first));
        // Another attempt number is another name.
        const retry = await h.createContainer(pod, 'twin', { metadata: { name: 'twin', attempt: 1 } });
        assert.notEqual(retry, first);
        assert.deepEqual((await h.settledInventory()).containerDirs.sort(), [first, retry].sort());
        await callUnary(h.runtime, 'RemoveContainer', { container_id: first });
        const third = await h.createContainer(pod, 'twin');
        assert.notEqual(third, first);
      } finally {
        await removePod(pod);
      }
    });
  });

  describe('bad configurations fail with a status and leave nothing behind', () => {
    let pod: Pod;
    podForTheseTests((p) => {
      pod = p;
    });

    async function expectNoChange(attempt: () => Promise<unknown>, code: status, message: RegExp): Promise<void> {
      const was = await h.settledInventory();
      await rejectsWithCode(attempt(), code, message);
      assert.deepEqual(await h.settledInventory(), was);
    }

    test('unknown image', async () => {
      await expectNoChange(() => h.createContainer(pod, 'no-image', { image: { image: `${h.registry.host}/skiff/absent:1` } }), status.NOT_FOUND, /absent/);
    });

    test('host-path mount: a missing source is made a directory, as containerd and CRI-O do; an unusable one is refused', async () => {
      const missing = join(h.skiff.dir, 'host-data', 'never-made', 'below');
      const id = await h.runContainer(pod, 'missing-hostpath', { mounts: [{ container_path: '/data', host_path: missing }] });
      assert.ok(statSync(missing).isDirectory(), 'the missing source and its parent are made');
      assert.equal((await h.exec(id, ['sh', '-c', 'echo made > /data/f && cat /data/f'])).stdout, 'made\n');
      await callUnary(h.runtime, 'RemoveContainer', { container_id: id }, { timeoutMs: 60_000 });

      const file = join(h.skiff.dir, 'host-data', 'a-file');
      await mkdir(join(h.skiff.dir, 'host-data'), { recursive: true });
      await writeFile(file, 'not a directory\n');
      await expectNoChange(
        () => h.createContainer(pod, 'bad-hostpath', { mounts: [{ container_path: '/data', host_path: join(file, 'below') }] }),
        status.INVALID_ARGUMENT,
        /a-file\/below/,
      );
    });

    test('unknown runtime handler', async () => {
      await expectNoChange(() => h.runPod({}, 'no-such-handler'), status.INVALID_ARGUMENT, /"no-such-handler"/);
    });

    test('a log path escaping the log directory', async () => {
      await expectNoChange(() => h.createContainer(pod, 'escape', { log_path: '../../escape.log' }), status.INVALID_ARGUMENT, /leaves/);
      assert.equal(existsSync(join(h.logDir, '..', 'escape.log')), false);
      assert.equal(existsSync(join(pod.config.log_directory!, '..', '..', 'escape.log')), false);
    });
  });
});
