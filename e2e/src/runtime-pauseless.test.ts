/**
 * Pods with and without a pause process, through their whole life on a real `skiff up`: the
 * kubelet's default pod (a PID namespace per container) runs with no catatonit, its IPC and UTS
 * namespaces held by files alone; a pod whose containers share a PID namespace keeps its pause.
 * Both run containers, exec, port-forward, report stats and events, come back after runtime-svc
 * is SIGKILLed, stop and are removed leaving nothing behind. A pod without a pause on the host
 * network and in a user namespace of its own, and one whose namespaces are gone when runtime-svc
 * starts again (as after a reboot), are covered too, and runtime.pause_every_pod changed by a reload.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { chmod, readdir, readFile, readlink, stat, writeFile } from 'node:fs/promises';
import { hostname } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import type { ClientReadableStream } from '@grpc/grpc-js';
import { status } from '@grpc/grpc-js';
import { callUnary, type cri } from '@skiff/proto';
import { busyboxEchoServer } from '@skiff/test-support';
import { startRuntimeHarness, type Pod, type RuntimeHarness } from './lib/runtime-harness.js';
import { eventually, wsForwardOnce } from './lib/stream-client.js';
import { rejectsWithCode } from './lib/grpc-assert.js';
import { SKIFF_ENTRY } from './lib/skiff-instance.js';

const run = promisify(execFile);
const ECHO_PORT = 8080;
const SIZE = 65536;
// Far above any real user, apart for each test process and from the other user-namespace tests'.
const HOST_BASE = 0x4c000000 + (process.pid % 1000) * 2 * SIZE;

let h: RuntimeHarness;
let counter = 0;

interface PodKind {
  name: string;
  options: Partial<cri.NamespaceOption>;
  pause: boolean;
}

const KINDS: PodKind[] = [
  { name: "the kubelet's default pod (a PID namespace per container)", options: { pid: 'CONTAINER' }, pause: false },
  { name: 'a pod whose containers share a PID namespace', options: { pid: 'POD' }, pause: true },
];

function podConfig(options: Partial<cri.NamespaceOption>, extra: Partial<cri.LinuxSandboxSecurityContext> = {}): Partial<cri.PodSandboxConfig> {
  return { linux: { security_context: { namespace_options: options, ...extra } } };
}

/** Host namespaces are runc's: these pods run under it whatever SKIFF_E2E_RUNTIME_HANDLER says. */
function runcPod(config: Partial<cri.PodSandboxConfig>): Promise<Pod> {
  return h.runPod(config, '');
}

function runIn(pod: Pod, overrides: Partial<cri.ContainerConfig> = {}): Promise<string> {
  return h.runContainer(pod, `c-${++counter}`, { linux: { security_context: { namespace_options: pod.config.linux?.security_context?.namespace_options ?? {} } }, ...overrides });
}

function sandboxDir(pod: Pod): string {
  return join(h.skiff.root, 'runtime', 'sandboxes', pod.id);
}

async function verboseInfo(pod: Pod): Promise<{ pause: boolean; pid: number }> {
  const { info } = await callUnary(h.runtime, 'PodSandboxStatus', { pod_sandbox_id: pod.id, verbose: true }, { timeoutMs: 10_000 });
  return JSON.parse(info['info']!) as { pause: boolean; pid: number };
}

/** The live catatonit processes whose cgroup names the pod (its pause, if it has one); an exited one not yet reaped is not. */
async function catatonitsOf(pod: Pod): Promise<number[]> {
  const found: number[] = [];
  for (const entry of await readdir('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    const [stat, cgroup] = await Promise.all([readFile(`/proc/${entry}/stat`, 'utf8').catch(() => ''), readFile(`/proc/${entry}/cgroup`, 'utf8').catch(() => '')]);
    const state = stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3);
    if (stat.includes('(catatonit)') && state !== 'Z' && state !== 'X' && cgroup.includes(pod.id)) found.push(Number(entry));
  }
  return found;
}

async function inside(id: string, cmd: string[]): Promise<string> {
  const result = await h.exec(id, cmd);
  assert.equal(result.code, 0, `${cmd.join(' ')}: ${result.stderr}`);
  return result.stdout.trim();
}

/** Mount points under the pod's directory or naming it. */
async function mountsOf(pod: Pod): Promise<string[]> {
  return (await readFile('/proc/self/mountinfo', 'utf8')).split('\n').filter((line) => line.includes(pod.id));
}


async function podStats(pod: Pod): Promise<cri.PodSandboxStats__Output> {
  const { stats } = await callUnary(h.runtime, 'PodSandboxStats', { pod_sandbox_id: pod.id }, { timeoutMs: 10_000 });
  return stats!;
}

async function forwardEcho(pod: Pod): Promise<void> {
  const { url } = await callUnary(h.runtime, 'PortForward', { pod_sandbox_id: pod.id, port: [ECHO_PORT] }, { timeoutMs: 10_000 });
  const payload = randomBytes(32 * 1024);
  const result = await wsForwardOnce(url, payload, payload.length);
  assert.equal(result.error, '');
  assert.ok(result.data.equals(payload), `the echo came back (${result.data.length} of ${payload.length} bytes)`);
}

/** Every event of a subscription, by id. */
class Events {
  readonly seen: cri.ContainerEventResponse__Output[] = [];
  private readonly stream: ClientReadableStream<cri.ContainerEventResponse__Output>;

  constructor() {
    this.stream = h.runtime.GetContainerEvents({});
    this.stream.on('data', (e: cri.ContainerEventResponse__Output) => this.seen.push(e));
    this.stream.on('error', () => undefined);
  }

  typesOf(id: string): string[] {
    return this.seen.filter((e) => e.container_id === id).map((e) => e.container_event_type);
  }

  close(): void {
    this.stream.cancel();
  }
}

before(async () => {
  h = await startRuntimeHarness();
  // A user-namespaced pod's root prepares its mounts: the directories above Skiff's root must let it pass.
  await chmod(h.skiff.dir, 0o711);
});

after(async () => {
  await h?.stop();
});

describe('pods with and without a pause process', () => {
  for (const kind of KINDS) {
    test(`${kind.name}: ${kind.pause ? 'a catatonit' : 'no catatonit'}, containers, exec, port-forward, stats, events, a SIGKILLed runtime-svc, stop and remove`, async () => {
      // A restarted runtime-svc ends every stream: one subscription before the SIGKILL, one after.
      let events = new Events();
      try {
        const pod = await runcPod(podConfig(kind.options));
        const info = await verboseInfo(pod);
        assert.equal(info.pause, kind.pause, 'verbose status says whether the pod has a pause');
        const pauses = await catatonitsOf(pod);
        assert.deepEqual(pauses, kind.pause ? [info.pid] : [], 'the catatonit processes of the pod');
        assert.equal((await h.podStatus(pod.id)).state, 'SANDBOX_READY');

        const app = await runIn(pod);
        const echo = await runIn(pod, { command: busyboxEchoServer(ECHO_PORT) });
        // The pod's UTS and IPC namespaces are its files', shared by its containers, named after the pod.
        for (const ns of ['ipc', 'uts']) {
          const file = `${ns}:[${(await stat(join(sandboxDir(pod), `${ns}ns`))).ino}]`;
          assert.equal(await inside(app, ['readlink', `/proc/self/ns/${ns}`]), file, `the app's ${ns} namespace is the pod's file`);
          assert.equal(await inside(echo, ['readlink', `/proc/self/ns/${ns}`]), file, `the echo server's ${ns} namespace is the pod's file`);
        }
        assert.equal(await inside(app, ['hostname']), pod.config.hostname);
        // PID 1 of the app's namespace: the pause where the pod shares one, else its own command.
        assert.equal(await inside(app, ['cat', '/proc/1/comm']), kind.pause ? 'catatonit' : 'sleep');
        const appPid = await inside(app, ['readlink', '/proc/self/ns/pid']);
        const echoPid = await inside(echo, ['readlink', '/proc/self/ns/pid']);
        if (kind.pause) assert.equal(appPid, echoPid, 'one PID namespace for the pod');
        else assert.notEqual(appPid, echoPid, 'a PID namespace per container');

        await eventually('the echo server to listen', async () => (await h.exec(echo, ['sh', '-c', `netstat -ltn | grep -q :${ECHO_PORT}`])).code === 0);
        await forwardEcho(pod);

        const stats = await podStats(pod);
        const names = stats.linux?.network?.interfaces.map((i) => i.name) ?? [];
        assert.ok(names.includes('eth0'), `the pod's interfaces: ${names.join(', ')}`);
        assert.ok(Number(stats.linux?.memory?.working_set_bytes?.value ?? 0) > 0, 'the pod uses memory');
        assert.ok(Number(stats.linux?.process?.process_count?.value ?? 0) >= 2, 'the pod counts its processes');
        assert.equal(stats.linux?.containers.length, 2);

        // Made and started, and nothing more: a pod without a pause has no process to be seen dying.
        assert.deepEqual(events.typesOf(pod.id), ['CONTAINER_CREATED_EVENT', 'CONTAINER_STARTED_EVENT']);
        events.close();
        await h.killRuntimeService();
        events = new Events();
        assert.equal((await h.podStatus(pod.id)).state, 'SANDBOX_READY', 'ready after the restart');
        assert.deepEqual(await catatonitsOf(pod), pauses, 'the same pause, or none, after the restart');
        const late = await runIn(pod);
        assert.equal(await inside(late, ['readlink', '/proc/self/ns/ipc']), await inside(app, ['readlink', '/proc/self/ns/ipc']), 'a new container joins the same IPC namespace');
        assert.equal(await inside(late, ['hostname']), pod.config.hostname);
        await forwardEcho(pod);

        await callUnary(h.runtime, 'StopPodSandbox', { pod_sandbox_id: pod.id }, { timeoutMs: 60_000 });
        assert.equal((await h.podStatus(pod.id)).state, 'SANDBOX_NOTREADY');
        for (const id of [app, echo, late]) assert.equal((await h.containerStatus(id)).state, 'CONTAINER_EXITED');
        assert.deepEqual(await catatonitsOf(pod), []);
        assert.deepEqual(
          (await mountsOf(pod)).filter((line) => /\/(ipcns|utsns|pidns|shm)\s/.test(line)),
          [],
          'no namespace file or /dev/shm stays mounted after StopPodSandbox',
        );
        await callUnary(h.runtime, 'RemovePodSandbox', { pod_sandbox_id: pod.id }, { timeoutMs: 60_000 });
        await h.settledInventory();
        assert.deepEqual(await mountsOf(pod), [], 'after RemovePodSandbox');

        await eventually('the removal event', async () => events.typesOf(pod.id).includes('CONTAINER_DELETED_EVENT'));
        assert.deepEqual(events.typesOf(pod.id), ['CONTAINER_STOPPED_EVENT', 'CONTAINER_DELETED_EVENT']);
      } finally {
        events.close();
      }
    });
  }

  test('a pod without a pause and without a running container still reports its network', async () => {
    const pod = await runcPod(podConfig({ pid: 'CONTAINER' }));
    const names = (await podStats(pod)).linux?.network?.interfaces.map((i) => i.name) ?? [];
    assert.ok(names.includes('eth0'), `the pod's interfaces: ${names.join(', ')}`);
    await callUnary(h.runtime, 'RemovePodSandbox', { pod_sandbox_id: pod.id }, { timeoutMs: 60_000 });
  });

  test("a pod without a pause on the host network has the host's name and network, and no UTS namespace of its own", async () => {
    const pod = await runcPod({ ...podConfig({ pid: 'CONTAINER', network: 'NODE' }), hostname: '' });
    assert.equal((await verboseInfo(pod)).pause, false);
    assert.deepEqual(await catatonitsOf(pod), []);
    const app = await runIn(pod);
    assert.equal(await inside(app, ['hostname']), hostname());
    assert.equal(await inside(app, ['readlink', '/proc/self/ns/net']), await readlink('/proc/self/ns/net'));
    await assert.rejects(stat(join(sandboxDir(pod), 'utsns')), { code: 'ENOENT' });
    await callUnary(h.runtime, 'RemovePodSandbox', { pod_sandbox_id: pod.id }, { timeoutMs: 60_000 });
    await h.settledInventory();
    assert.deepEqual(await mountsOf(pod), []);
  });

  test("a pod without a pause sets its sysctls in its own namespaces, in a user namespace too; one the kernel refuses leaves nothing", async () => {
    const sysctls = {
      'kernel.shm_rmid_forced': '1',
      'fs.mqueue.msg_max': '20',
      'net.ipv4.ip_unprivileged_port_start': '0',
      // An interface's: written once CNI ADD has made eth0.
      'net.ipv4.conf.eth0.arp_ignore': '1',
    };
    const mapping = [{ host_id: HOST_BASE + SIZE, container_id: 0, length: SIZE }];
    for (const userns of [undefined, { mode: 'POD' as const, uids: mapping, gids: mapping }]) {
      const options: Partial<cri.NamespaceOption> = { pid: 'CONTAINER', ...(userns ? { userns_options: userns } : {}) };
      const pod = await runcPod({ linux: { sysctls, security_context: { namespace_options: options } } });
      assert.equal((await verboseInfo(pod)).pause, false);
      assert.deepEqual(await catatonitsOf(pod), []);
      const app = await runIn(pod);
      for (const [name, value] of Object.entries(sysctls)) assert.equal(await inside(app, ['cat', `/proc/sys/${name.replaceAll('.', '/')}`]), value, `${name} in the pod`);
      await callUnary(h.runtime, 'RemovePodSandbox', { pod_sandbox_id: pod.id }, { timeoutMs: 60_000 });
    }
    // The host's own values are untouched.
    assert.equal((await readFile('/proc/sys/kernel/shm_rmid_forced', 'utf8')).trim(), '0');
    const before = await h.settledInventory();
    const refused = runcPod({ linux: { sysctls: { 'kernel.shm_rmid_forced': 'many' }, security_context: { namespace_options: { pid: 'CONTAINER' } } } });
    await rejectsWithCode(refused, status.INVALID_ARGUMENT, /setting sysctl kernel\.shm_rmid_forced=many in the pod's IPC namespace failed/);
    assert.deepEqual(await h.settledInventory(), before, 'nothing of the refused pod is left');
  });

  test("a user-namespaced pod without a pause: its IPC and UTS namespaces are its user namespace's, which its containers join", async () => {
    const mapping = [{ host_id: HOST_BASE, container_id: 0, length: SIZE }];
    const pod = await runcPod(podConfig({ pid: 'CONTAINER', userns_options: { mode: 'POD', uids: mapping, gids: mapping } }));
    assert.equal((await verboseInfo(pod)).pause, false);
    assert.deepEqual(await catatonitsOf(pod), []);
    const app = await runIn(pod);
    assert.equal(await inside(app, ['hostname']), pod.config.hostname);
    assert.equal(await inside(app, ['readlink', '/proc/self/ns/user']), `user:[${(await stat(join(sandboxDir(pod), 'userns'))).ino}]`);
    assert.equal(await inside(app, ['readlink', '/proc/self/ns/ipc']), `ipc:[${(await stat(join(sandboxDir(pod), 'ipcns'))).ino}]`);
    // Its IPC and UTS namespaces belong to the pod's user namespace: its root may join and name them
    // (setns from inside a user namespace into one the host's owns is refused).
    const userns = `--user=${join(sandboxDir(pod), 'userns')}`;
    await run('nsenter', [userns, `--ipc=${join(sandboxDir(pod), 'ipcns')}`, `--uts=${join(sandboxDir(pod), 'utsns')}`, 'hostname', pod.config.hostname ?? '']);
    assert.equal(await inside(app, ['stat', '-c', '%u', '/bin/busybox']), '0');
    await h.killRuntimeService();
    assert.equal((await h.podStatus(pod.id)).state, 'SANDBOX_READY');
    await runIn(pod);
    await callUnary(h.runtime, 'RemovePodSandbox', { pod_sandbox_id: pod.id }, { timeoutMs: 60_000 });
    await h.settledInventory();
    assert.deepEqual(await mountsOf(pod), []);
  });

  test('runtime.pause_every_pod, set and unset by skiff reload, gives the pods made afterwards a pause or none', async () => {
    const original = await readFile(h.skiff.configPath, 'utf8');
    const reloadWith = async (text: string): Promise<void> => {
      await writeFile(h.skiff.configPath, text);
      const from = h.skiff.output().length;
      await run(process.execPath, [SKIFF_ENTRY, 'reload', '--config', h.skiff.configPath]);
      await eventually('runtime-svc to reload', async () => /"service":"runtime-svc".*"configuration reloaded"/.test(h.skiff.output().slice(from)), 20_000);
    };
    assert.match(original, /^\[runtime\]$/m);
    await reloadWith(original.replace(/^\[runtime\]$/m, '[runtime]\npause_every_pod = true'));
    const withPause = await runcPod(podConfig({ pid: 'CONTAINER' }));
    await reloadWith(original);
    const without = await runcPod(podConfig({ pid: 'CONTAINER' }));
    assert.equal((await verboseInfo(withPause)).pause, true);
    assert.equal((await catatonitsOf(withPause)).length, 1);
    assert.equal((await verboseInfo(without)).pause, false);
    assert.deepEqual(await catatonitsOf(without), []);
    // A container of the pod with a pause, which asks for a PID namespace of its own, gets one.
    const app = await runIn(withPause);
    assert.equal(await inside(app, ['cat', '/proc/1/comm']), 'sleep');
    for (const pod of [withPause, without]) await callUnary(h.runtime, 'RemovePodSandbox', { pod_sandbox_id: pod.id }, { timeoutMs: 60_000 });
  });

  test('a pod without a pause whose namespaces are gone when runtime-svc starts again (a reboot) is not ready, and stops and goes cleanly', async () => {
    const pod = await runcPod(podConfig({ pid: 'CONTAINER' }));
    await run('umount', ['--lazy', join(sandboxDir(pod), 'ipcns')]);
    await h.killRuntimeService();
    assert.equal((await h.podStatus(pod.id)).state, 'SANDBOX_NOTREADY');
    await callUnary(h.runtime, 'StopPodSandbox', { pod_sandbox_id: pod.id }, { timeoutMs: 60_000 });
    await callUnary(h.runtime, 'RemovePodSandbox', { pod_sandbox_id: pod.id }, { timeoutMs: 60_000 });
    await h.settledInventory();
    assert.deepEqual(await mountsOf(pod), []);
  });
});
