/**
 * A pod's namespaces are held by files, not by its pause process's pid: an app container's spec
 * names the pinned files (never /proc/<pid>/ns), its processes share the pause's IPC, UTS, PID
 * and user namespaces, a SIGKILLed runtime-svc comes back to pods whose containers still join
 * them (and pins those of a pod that has none), a pod whose pause died refuses containers, and
 * stopping and removing a pod leave no pin in the mount table.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { chmod, readFile, readlink, rm, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { status } from '@grpc/grpc-js';
import { callUnary, type cri } from '@skiff/proto';
import { rejectsWithCode } from './lib/grpc-assert.js';
import { startRuntimeHarness, type Pod, type RuntimeHarness } from './lib/runtime-harness.js';
import { eventually } from './lib/stream-client.js';

const run = promisify(execFile);
const SIZE = 65536;
// Far above any real user, apart for each test process and from the other user-namespace tests'.
const HOST_BASE = 0x48000000 + (process.pid % 1000) * 2 * SIZE;
const POD_KINDS = ['ipc', 'uts', 'pid'] as const;

let h: RuntimeHarness;
let counter = 0;

interface SpecNamespace {
  type: string;
  path?: string;
}

function usernsPodConfig(hostId: number): Partial<cri.PodSandboxConfig> {
  const mapping = [{ host_id: hostId, container_id: 0, length: SIZE }];
  return { linux: { security_context: { namespace_options: { userns_options: { mode: 'POD', uids: mapping, gids: mapping } } } } };
}

/** Host namespaces are runc's: these pods run under it whatever SKIFF_E2E_RUNTIME_HANDLER says. */
function runcPod(config: Partial<cri.PodSandboxConfig> = {}): Promise<Pod> {
  return h.runPod(config, '');
}

async function runIn(pod: Pod): Promise<string> {
  return h.runContainer(pod, `c-${++counter}`, { linux: { security_context: { namespace_options: pod.config.linux?.security_context?.namespace_options ?? {} } } });
}

function sandboxDir(pod: Pod): string {
  return join(h.skiff.root, 'runtime', 'sandboxes', pod.id);
}

async function pausePid(pod: Pod): Promise<number> {
  const { info } = await callUnary(h.runtime, 'PodSandboxStatus', { pod_sandbox_id: pod.id, verbose: true }, { timeoutMs: 10_000 });
  return (JSON.parse(info['info']!) as { pid: number }).pid;
}

async function specNamespaces(id: string): Promise<SpecNamespace[]> {
  const { info } = await callUnary(h.runtime, 'ContainerStatus', { container_id: id, verbose: true }, { timeoutMs: 10_000 });
  return (JSON.parse(info['info']!) as { runtimeSpec: { linux: { namespaces: SpecNamespace[] } } }).runtimeSpec.linux.namespaces;
}

/** "ipc:[4026532179]" as the container's own process sees it. */
async function namespaceInside(id: string, kind: string): Promise<string> {
  const result = await h.exec(id, ['readlink', `/proc/self/ns/${kind}`]);
  assert.equal(result.code, 0, result.stderr);
  return result.stdout.trim();
}

/** Mount points whose path names the pod's pins or its user namespace. */
async function pinMounts(pod: Pod): Promise<string[]> {
  const mountinfo = await readFile('/proc/self/mountinfo', 'utf8');
  return mountinfo
    .split('\n')
    .map((line) => line.split(' ')[4] ?? '')
    .filter((point) => point.includes(pod.id) && /\/(ipcns|utsns|pidns|userns)$/.test(point));
}

async function mountsOf(pod: Pod): Promise<string[]> {
  return (await readFile('/proc/self/mountinfo', 'utf8')).split('\n').filter((line) => line.includes(pod.id));
}

/** The container is in the pause's namespaces of every kind, which are the pinned files'. */
async function assertSharesPause(pod: Pod, id: string, kinds: readonly string[]): Promise<void> {
  const pid = await pausePid(pod);
  for (const kind of kinds) {
    const pause = await readlink(`/proc/${pid}/ns/${kind}`);
    assert.equal(await namespaceInside(id, kind), pause, `the ${kind} namespace of container ${id} is the pause's`);
    const file = kind === 'user' ? join(sandboxDir(pod), 'userns') : join(sandboxDir(pod), `${kind}ns`);
    assert.equal(pause, `${kind}:[${(await stat(file)).ino}]`, `${file} pins the pause's ${kind} namespace`);
  }
}


before(async () => {
  h = await startRuntimeHarness();
  // The pod's root prepares its mounts: the directories above Skiff's root must let it pass.
  await chmod(h.skiff.dir, 0o711);
});

after(async () => {
  await h?.stop();
});

describe("a pod's namespaces, held by files", () => {
  test("an app container's spec joins the pinned files, never /proc/<pid>, and it shares the pause's IPC, UTS and PID namespaces", async () => {
    const pod = await runcPod();
    const id = await runIn(pod);
    const namespaces = await specNamespaces(id);
    for (const kind of POD_KINDS) {
      assert.equal(namespaces.find((ns) => ns.type === kind)?.path, join(sandboxDir(pod), `${kind}ns`), `the ${kind} namespace`);
    }
    assert.deepEqual(namespaces.filter((ns) => ns.path?.startsWith('/proc/')), [], 'no namespace is joined through /proc');
    await assertSharesPause(pod, id, POD_KINDS);
  });

  test("a user-namespaced pod's containers join its user namespace by its file, and its other namespaces by theirs", async () => {
    const pod = await runcPod(usernsPodConfig(HOST_BASE));
    const id = await runIn(pod);
    const namespaces = await specNamespaces(id);
    assert.equal(namespaces.find((ns) => ns.type === 'user')?.path, join(sandboxDir(pod), 'userns'));
    assert.deepEqual(namespaces.filter((ns) => ns.path?.startsWith('/proc/')), []);
    await assertSharesPause(pod, id, [...POD_KINDS, 'user']);
    // The id-mapped layers are mapped with the pod's namespace: the image's root is the pod's root.
    assert.equal((await h.exec(id, ['stat', '-c', '%u', '/bin/busybox'])).stdout, '0\n');
  });

  test('runtime-svc killed mid-life comes back to pods whose new containers join the same namespaces, and pins those of a pod that had none', async () => {
    const pod = await runcPod();
    const first = await runIn(pod);
    // A pod as one started before namespaces were pinned: no pin, its pause alive.
    const unpinned = await runcPod(usernsPodConfig(HOST_BASE + SIZE));
    for (const kind of POD_KINDS) {
      const file = join(sandboxDir(unpinned), `${kind}ns`);
      await run('umount', [file]);
      await rm(file);
    }
    await h.killRuntimeService();

    const second = await runIn(pod);
    for (const kind of POD_KINDS) assert.equal(await namespaceInside(second, kind), await namespaceInside(first, kind), `the ${kind} namespace after the restart`);
    await assertSharesPause(pod, second, POD_KINDS);
    const late = await runIn(unpinned);
    await assertSharesPause(unpinned, late, [...POD_KINDS, 'user']);
  });

  test('a pod whose pause process died takes no container: FailedPrecondition, for a new one and for one created before', async () => {
    const pod = await runcPod();
    const created = await h.createContainer(pod, `c-${++counter}`);
    process.kill(await pausePid(pod), 'SIGKILL');
    await eventually('the pod to turn NOTREADY', async () => (await h.podStatus(pod.id)).state === 'SANDBOX_NOTREADY');
    await rejectsWithCode(callUnary(h.runtime, 'StartContainer', { container_id: created }, { timeoutMs: 60_000 }), status.FAILED_PRECONDITION, /not ready/);
    await rejectsWithCode(h.createContainer(pod, `c-${++counter}`), status.FAILED_PRECONDITION, /not ready/);
  });

  test('StopPodSandbox releases the pins and RemovePodSandbox leaves no mount of the pod', async () => {
    for (const config of [{}, usernsPodConfig(HOST_BASE + 2 * SIZE)]) {
      const pod = await runcPod(config);
      await runIn(pod);
      assert.equal((await pinMounts(pod)).length, config.linux ? 4 : 3, 'pinned while the pod runs');
      await callUnary(h.runtime, 'StopPodSandbox', { pod_sandbox_id: pod.id }, { timeoutMs: 60_000 });
      assert.deepEqual(await pinMounts(pod), [], 'after StopPodSandbox');
      await callUnary(h.runtime, 'RemovePodSandbox', { pod_sandbox_id: pod.id }, { timeoutMs: 60_000 });
      await h.settledInventory();
      assert.deepEqual(await mountsOf(pod), [], 'after RemovePodSandbox');
    }
  });
});
