/**
 * gVisor as Skiff's second isolation level: pods with runtime_handler "runsc" run under gVisor's
 * own kernel (checked from inside), keep their own network namespace and address, and everything a
 * kubelet does works as it does with runc: logs, exit codes, stop and kill, exec and attach with
 * and without a terminal, port-forward, stats, an OOM, a SIGKILLed runtime-svc, and a gVisor
 * kernel that dies.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { promisify } from 'node:util';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { status } from '@grpc/grpc-js';
import { callUnary, type cri } from '@skiff/proto';
import { busyboxEchoServer } from '@skiff/test-support';
import { rejectsWithCode } from './lib/grpc-assert.js';
import { getFreePort } from './lib/free-port.js';
import { openRemoteCommand } from './lib/remote-command.js';
import { eventually, wsExec, wsForwardOnce } from './lib/stream-client.js';
import { startRuntimeHarness, type Pod, type RuntimeHarness } from './lib/runtime-harness.js';
import { placesOf } from './lib/runtime-inventory.js';

const HANDLER = 'runsc';
const run = promisify(execFile);
const HOST_RELEASE = readFileSync('/proc/sys/kernel/osrelease', 'utf8').trim();

let h: RuntimeHarness;
let pod: Pod;
let counter = 0;

function name(base: string): string {
  return `${base}-${++counter}`;
}

function sharedPidPod(overrides: Partial<cri.PodSandboxConfig> = {}): Promise<Pod> {
  return h.runPod({ ...overrides, linux: { security_context: { namespace_options: { pid: 'POD' } } } }, HANDLER);
}

async function stop(id: string, timeout: number): Promise<cri.ContainerStatus__Output> {
  await callUnary(h.runtime, 'StopContainer', { container_id: id, timeout }, { timeoutMs: 60_000 });
  return h.containerStatus(id);
}

/** Retries while the server in a just-started container is not listening yet. */
async function fetchText(url: string): Promise<string> {
  let last: unknown;
  for (let attempt = 0; attempt < 50; attempt++) {
    try {
      return await (await fetch(url, { signal: AbortSignal.timeout(2000) })).text();
    } catch (err) {
      last = err;
      await new Promise((r) => setTimeout(r, 200));
    }
  }
  throw last;
}

function httpd(port: number, page: string): string[] {
  return ['sh', '-c', `mkdir -p /www && echo ${page} > /www/index.html && exec httpd -f -p ${port} -h /www`];
}

before(async () => {
  h = await startRuntimeHarness();
  pod = await sharedPidPod();
});

after(async () => {
  await h?.stop();
});

describe('a gVisor pod', () => {
  test('Status lists the runsc handler without the features gVisor lacks; a user-namespaced gVisor pod is refused', async () => {
    const { runtime_handlers } = await callUnary(h.runtime, 'Status', {});
    const runsc = runtime_handlers.find((r) => r.name === HANDLER);
    assert.deepEqual(runsc?.features, { recursive_read_only_mounts: false, user_namespaces: false });
    assert.equal(runtime_handlers.find((r) => r.name === '')?.features?.user_namespaces, true);
    const userns = { mode: 'POD' as const, uids: [{ host_id: 1 << 30, container_id: 0, length: 65536 }], gids: [{ host_id: 1 << 30, container_id: 0, length: 65536 }] };
    await rejectsWithCode(
      h.runPod({ linux: { security_context: { namespace_options: { userns_options: userns } } } }, HANDLER),
      status.INVALID_ARGUMENT,
      /"runsc" does not support user namespaces/,
    );
  });

  test('runs its containers under the gVisor kernel, logs every line and keeps their exit code', async () => {
    const id = await h.runContainer(pod, name('kernel'), { command: ['sh', '-c', 'dmesg | head -n 1; uname -r; for i in 1 2 3; do echo line-$i; done; echo to-stderr >&2; exit 7'] });
    const exited = await h.waitForExit(id);
    assert.equal(exited.exit_code, 7);
    assert.equal(exited.reason, 'Error');
    await eventually('the last line in the log', async () => readFileSync(exited.log_path, 'utf8').includes('to-stderr'));
    const lines = readFileSync(exited.log_path, 'utf8').trimEnd().split('\n').map((l) => l.split(' ').slice(1).join(' '));
    assert.match(lines[0]!, /^stdout F \[ *0\.0+\] Starting gVisor\.\.\.$/);
    assert.notEqual(lines[1], `stdout F ${HOST_RELEASE}`, 'uname -r inside is not the host kernel');
    assert.deepEqual(lines.slice(2), ['stdout F line-1', 'stdout F line-2', 'stdout F line-3', 'stderr F to-stderr']);
  });

  test("the pod's containers share one sandbox: one PID namespace, one localhost", async () => {
    const server = await h.runContainer(pod, name('echo-server'), { command: busyboxEchoServer(7000) });
    const client = await h.runContainer(pod, name('client'));
    await eventually('the echo server in the other container to answer on localhost', async () => {
      const r = await h.exec(client, ['sh', '-c', 'echo over-localhost | nc -w 2 127.0.0.1 7000']);
      return r.stdout.includes('over-localhost');
    });
    const ps = await h.exec(client, ['ps', '-o', 'args']);
    assert.match(ps.stdout, /nc -l+ -p 7000 -e cat/, 'the other container\'s process is visible');
    await stop(server, 2);
    await stop(client, 2);
  });

  test('ExecSync with its timeout; Exec and Attach with and without a terminal, resize too', async () => {
    const app = await h.runContainer(pod, name('app'));
    const sync = await h.exec(app, ['sh', '-c', 'echo out; echo err >&2; exit 3']);
    assert.deepEqual(sync, { code: 3, stdout: 'out\n', stderr: 'err\n' });
    await rejectsWithCode(callUnary(h.runtime, 'ExecSync', { container_id: app, cmd: ['sleep', '31'], timeout: 1 }, { timeoutMs: 30_000 }), status.DEADLINE_EXCEEDED);
    const running = async (pattern: string): Promise<boolean> => (await h.exec(app, ['ps', '-o', 'args'])).stdout.includes(pattern);
    await eventually('the timed-out command to be killed inside the sandbox', async () => !(await running('sleep 31')));

    const vanishing = await openRemoteCommand((await callUnary(h.runtime, 'Exec', { container_id: app, cmd: ['sh', '-c', 'echo started; exec sleep 32'], stdout: true })).url);
    await vanishing.waitForStdout(/started/);
    assert.ok(await running('sleep 32'));
    vanishing.vanish();
    await eventually('the process of a client that vanished to be killed inside the sandbox', async () => !(await running('sleep 32')));

    const plain = await wsExec((await callUnary(h.runtime, 'Exec', { container_id: app, cmd: ['sh', '-c', 'cat; uname -s'], stdin: true, stdout: true, stderr: true })).url, 'v5.channel.k8s.io', Buffer.from('piped-through\n'));
    assert.equal(plain.stdout.toString(), 'piped-through\nLinux\n');

    const { url } = await callUnary(h.runtime, 'Exec', { container_id: app, cmd: ['sh'], tty: true, stdin: true, stdout: true });
    const terminal = await openRemoteCommand(url);
    terminal.send('echo in-$((6*7)); exit 5\n');
    await terminal.waitForStdout(/in-42\r\n/);
    await terminal.closed;
    assert.equal(terminal.exitCode(), 5);

    const echo = await h.runContainer(pod, name('cat'), { command: ['cat'], stdin: true });
    const plainAttach = await openRemoteCommand((await callUnary(h.runtime, 'Attach', { container_id: echo, stdin: true, stdout: true, stderr: true })).url);
    plainAttach.send('through-attach\n');
    await plainAttach.waitForStdout(/through-attach\n/);
    plainAttach.close();
    await stop(echo, 0);

    const attached = await h.runContainer(pod, name('attached'), { command: ['sh'], tty: true, stdin: true });
    const session = await openRemoteCommand((await callUnary(h.runtime, 'Attach', { container_id: attached, tty: true, stdin: true, stdout: true })).url);
    session.resize(123, 45);
    session.send('echo attached-$((40+2)); stty size\n');
    await session.waitForStdout(/attached-42\r\n45 123/);
    session.close();
    await stop(attached, 1);
    await stop(app, 1);
  });

  test('a container whose pid is SIGKILLed from the host is reported killed, and is gone from the sandbox too', async () => {
    const victim = await h.runContainer(pod, name('victim'), { command: ['sh', '-c', 'exec sleep 3333'] });
    const observer = await h.runContainer(pod, name('observer'));
    const { info } = await callUnary(h.runtime, 'ContainerStatus', { container_id: victim, verbose: true });
    const pid = (JSON.parse(info['info'] ?? '{}') as { pid?: number }).pid ?? 0;
    assert.ok(pid > 0);
    process.kill(pid, 'SIGKILL');
    assert.equal((await h.waitForExit(victim)).exit_code, 137);
    await eventually('the container to be gone from the sandbox', async () => !(await h.exec(observer, ['ps', '-o', 'args'])).stdout.includes('sleep 3333'));
    await stop(observer, 0);
  });

  test('a read-only root filesystem stays read-only inside the sandbox, the pod files readable', async () => {
    const id = await h.runContainer(pod, name('readonly'), { linux: { security_context: { readonly_rootfs: true } } });
    const r = await h.exec(id, ['sh', '-c', 'touch /written 2>&1; echo rc=$?; cat /etc/hostname']);
    assert.match(r.stdout, /Read-only file system\nrc=1\n/);
    assert.match(r.stdout, new RegExp(`${pod.config.hostname}\n$`));
    await stop(id, 0);
  });

  test('seccomp: RuntimeDefault and Localhost profiles filter the sandboxed container; Unconfined does not', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'skiff-gvisor-seccomp-'));
    try {
      const noChmod = join(dir, 'no-chmod.json');
      await writeFile(noChmod, JSON.stringify({ defaultAction: 'SCMP_ACT_ALLOW', syscalls: [{ names: ['chmod', 'fchmod', 'fchmodat', 'fchmodat2'], action: 'SCMP_ACT_ERRNO', errnoRet: 1 }] }));
      const probe = 'grep "^Seccomp:" /proc/self/status; touch /tmp/f; chmod 600 /tmp/f 2>&1; echo chmod=$?';
      const outputOf = async (seccomp: cri.SecurityProfile): Promise<string> => {
        const id = await h.runContainer(pod, name(`seccomp-${seccomp.profile_type}`), { command: ['sh', '-c', probe], linux: { security_context: { seccomp } } });
        const exited = await h.waitForExit(id);
        await eventually('the last line in the log', async () => readFileSync(exited.log_path, 'utf8').includes('chmod='));
        return readFileSync(exited.log_path, 'utf8');
      };
      assert.match(await outputOf({ profile_type: 'RuntimeDefault' }), /Seccomp:\s+2\n.*chmod=0\n/s);
      const localhost = await outputOf({ profile_type: 'Localhost', localhost_ref: noChmod });
      assert.match(localhost, /Seccomp:\s+2\n/);
      assert.match(localhost, /Operation not permitted\n.*chmod=1\n/s);
      assert.match(await outputOf({ profile_type: 'Unconfined' }), /Seccomp:\s+0\n.*chmod=0\n/s);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  test('masked and read-only paths gVisor would ignore are refused with InvalidArgument naming them', async () => {
    await rejectsWithCode(h.createContainer(pod, name('masked'), { linux: { security_context: { masked_paths: ['/bin/ls'] } } }), status.INVALID_ARGUMENT, /cannot mask paths \(masked_paths \/bin\/ls\)/);
    await rejectsWithCode(h.createContainer(pod, name('readonly-paths'), { linux: { security_context: { readonly_paths: ['/tmp'] } } }), status.INVALID_ARGUMENT, /cannot make paths read-only \(readonly_paths \/tmp\)/);
  });

  test("a read-only bind leaves the host's submounts below it writable, as runc does; rshared propagation is refused", async () => {
    const source = join(h.skiff.dir, 'gvisor-ro-source');
    await mkdir(join(source, 'tmpfs'), { recursive: true });
    await run('mount', ['-t', 'tmpfs', '-o', 'size=1m', 'skiff-e2e-gvisor-ro', join(source, 'tmpfs')]);
    try {
      const id = await h.runContainer(pod, name('ro-bind'), { mounts: [{ container_path: '/mnt', host_path: source, readonly: true }] });
      const r = await h.exec(id, ['sh', '-c', 'touch /mnt/top 2>&1; echo top=$?; touch /mnt/tmpfs/sub 2>&1; echo sub=$?']);
      assert.match(r.stdout, /Read-only file system\ntop=1\nsub=0\n$/);
      await stop(id, 0);
      await rejectsWithCode(
        h.createContainer(pod, name('rshared'), { mounts: [{ container_path: '/mnt', host_path: source, propagation: 'PROPAGATION_BIDIRECTIONAL' }] }),
        status.INVALID_ARGUMENT,
        /mount \/mnt cannot have bidirectional \(rshared\) propagation/,
      );
    } finally {
      await run('umount', ['--lazy', join(source, 'tmpfs')]);
    }
  });

  test('port-forward reaches a server in the sandbox', async () => {
    await h.runContainer(pod, name('forward-target'), { command: busyboxEchoServer(7100) });
    const { url } = await callUnary(h.runtime, 'PortForward', { pod_sandbox_id: pod.id, port: [7100] });
    const payload = Buffer.from('forwarded into gVisor\n');
    let forwarded: { data: Buffer; error: string } = { data: Buffer.alloc(0), error: '' };
    await eventually('the forwarded echo', async () => (forwarded = await wsForwardOnce(url, payload, payload.length, 3000)).data.equals(payload));
    assert.equal(forwarded.data.toString(), payload.toString(), 'the server in the sandbox echoed the bytes back');
    assert.equal(forwarded.error, '', 'nothing on the error stream');
  });

  test('container and pod stats count a busy container', async () => {
    const busy = await h.runContainer(pod, name('busy'), { command: ['sh', '-c', 'head -c 8m /dev/zero > /tmp/held; while :; do :; done'] });
    await new Promise((r) => setTimeout(r, 1500));
    const { stats } = await callUnary(h.runtime, 'ContainerStats', { container_id: busy });
    assert.ok(Number(stats?.cpu?.usage_core_nano_seconds?.value) > 0, 'CPU time is counted');
    assert.ok(Number(stats?.memory?.working_set_bytes?.value) > 0, 'memory is counted');
    const pod1 = await callUnary(h.runtime, 'PodSandboxStats', { pod_sandbox_id: pod.id });
    assert.ok(Number(pod1.stats?.linux?.cpu?.usage_core_nano_seconds?.value) > 0);
    assert.ok(Number(pod1.stats?.linux?.memory?.working_set_bytes?.value) > 0);
    await stop(busy, 0);
  });

  test("metrics and stats: a container's own processes from the sandbox's kernel; the pod cgroup's detail only for a pod's only container, never its host processes", async () => {
    const alone = await h.runPod({}, HANDLER);
    const only = await h.runContainer(alone, 'only', { command: ['sh', '-c', 'sleep 1000 & sleep 1000 & while :; do :; done'] });
    const pair = await h.runPod({}, HANDLER);
    const shared = await h.runContainer(pair, 'shared', { command: ['sh', '-c', 'sleep 1000 & while :; do :; done'] });
    await h.runContainer(pair, 'other', { command: ['sleep', '1000'] });
    let alone1 = new Map<string, number>();
    let shared1 = new Map<string, number>();
    // sh and its two sleeps; sh and one sleep: counted in the sandbox's kernel, per container, once
    // sh has started them (a busy node takes a while) and runsc has answered in time.
    await eventually(
      "each container's processes counted in the sandbox's kernel",
      async () => {
        const { pod_metrics } = await callUnary(h.runtime, 'ListPodSandboxMetrics', {}, { timeoutMs: 30_000 });
        const familiesOf = (podId: string, id: string): Map<string, number> =>
          new Map(pod_metrics.find((p) => p.pod_sandbox_id === podId)?.container_metrics.find((c) => c.container_id === id)?.metrics.map((m) => [m.name, Number(m.value?.value)]));
        alone1 = familiesOf(alone.id, only);
        shared1 = familiesOf(pair.id, shared);
        return alone1.get('container_processes') === 3 && shared1.get('container_processes') === 2;
      },
      60_000,
    );
    for (const family of ['container_cpu_user_seconds_total', 'container_cpu_system_seconds_total', 'container_cpu_cfs_periods_total', 'container_memory_cache', 'container_memory_rss', 'container_memory_max_usage_bytes', 'container_memory_failcnt', 'container_oom_events_total', 'container_threads_max']) {
      assert.ok(alone1.has(family), `${family} of a pod's only container`);
      assert.ok(!shared1.has(family), `no ${family} for a container that shares its pod`);
    }
    for (const family of ['container_file_descriptors', 'container_sockets']) {
      assert.ok(!alone1.has(family) && !shared1.has(family), `no ${family}: the sandbox's host descriptors are not the container's`);
    }
    // ContainerStats the same way: RSS and page faults are the pod cgroup's, for its only container alone.
    const [onlyStats, sharedStats] = await Promise.all([only, shared].map(async (id) => (await callUnary(h.runtime, 'ContainerStats', { container_id: id })).stats?.memory));
    assert.ok(Number(onlyStats?.rss_bytes?.value) > 0 && Number(onlyStats?.page_faults?.value) > 0, 'RSS and page faults of the pod cgroup');
    assert.equal(sharedStats?.rss_bytes ?? null, null);
    assert.equal(sharedStats?.page_faults ?? null, null);
    for (const { id } of [alone, pair]) {
      await callUnary(h.runtime, 'StopPodSandbox', { pod_sandbox_id: id }, { timeoutMs: 60_000 });
      await callUnary(h.runtime, 'RemovePodSandbox', { pod_sandbox_id: id }, { timeoutMs: 60_000 });
    }
  });

  test('stop honours the stop signal and the grace period; kill is 137', async () => {
    const graceful = await h.runContainer(pod, name('graceful'), { command: ['sh', '-c', "trap 'exit 42' TERM; while :; do sleep 0.1; done"] });
    const deaf = await h.runContainer(pod, name('deaf'), { command: ['sh', '-c', "trap '' TERM; while :; do sleep 0.1; done"] });
    const quitter = await h.runContainer(pod, name('quitter'), { command: ['sh', '-c', "trap 'exit 3' QUIT; while :; do sleep 0.1; done"], stop_signal: 'SIGNAL_SIGQUIT' });
    await new Promise((r) => setTimeout(r, 300));
    const [a, b, c] = await Promise.all([stop(graceful, 10), stop(deaf, 1), stop(quitter, 10)]);
    assert.equal(a.exit_code, 42);
    assert.equal(b.exit_code, 137);
    assert.equal(c.exit_code, 3);
  });

  test("a gVisor pod over its pod cgroup's memory limit is OOMKilled as a whole", async () => {
    // The kubelet's pod cgroup bounds the sandbox: gVisor's kernel keeps no per-container limit.
    const hungry = await h.runPod({ linux: { cgroup_parent: await h.memoryBoundCgroupParent('gvisor-oom', 160 * 1024 * 1024) } }, HANDLER);
    const id = await h.runContainer(hungry, 'hog', { command: ['sh', '-c', 'a=$(head -c 400000000 /dev/zero | tr "\\0" x); echo ${#a}'] });
    // 400 MB through a pipe in the sandbox's kernel: minutes on a busy node before the limit is hit.
    const exited = await h.waitForExit(id, 240_000);
    assert.equal(exited.reason, 'OOMKilled', `exit ${exited.exit_code}: ${exited.message}`);
    await eventually('the pod to turn NOTREADY', async () => (await h.podStatus(hungry.id)).state === 'SANDBOX_NOTREADY');
    await callUnary(h.runtime, 'RemovePodSandbox', { pod_sandbox_id: hungry.id }, { timeoutMs: 60_000 });
  });
});

describe('gVisor pods beside runc pods', () => {
  test('a runc pod reaches a gVisor pod on its address, and a hostPort reaches it from the host', async () => {
    const hostPort = await getFreePort();
    const server = await h.runPod({ port_mappings: [{ protocol: 'TCP', container_port: 8080, host_port: hostPort }] }, HANDLER);
    const client = await h.runPod({}, '');
    await h.runContainer(server, 'web', { command: httpd(8080, 'from-gvisor') });
    const caller = await h.runContainer(client, 'caller');
    const ip = await h.podIp(server);
    await eventually('the runc pod to reach the gVisor pod', async () => (await h.exec(caller, ['wget', '-q', '-O', '-', `http://${ip}:8080/`])).stdout === 'from-gvisor\n');
    assert.equal(await fetchText(`http://127.0.0.1:${hostPort}/`), 'from-gvisor\n');
    for (const p of [server, client]) await callUnary(h.runtime, 'RemovePodSandbox', { pod_sandbox_id: p.id }, { timeoutMs: 60_000 });
  });

  test('a server on port 80 answers on the pod address, a hostPort and port-forward, beside another container exec reaches', async () => {
    const hostPort = await getFreePort();
    const web = await h.runPod({ port_mappings: [{ protocol: 'TCP', container_port: 80, host_port: hostPort }] }, HANDLER);
    const server = await h.runContainer(web, 'web', { command: httpd(80, 'on-port-80') });
    const sidecar = await h.runContainer(web, 'sidecar');
    const ip = await h.podIp(web);
    assert.equal(await fetchText(`http://${ip}:80/`), 'on-port-80\n');
    assert.equal(await fetchText(`http://127.0.0.1:${hostPort}/`), 'on-port-80\n');
    const { url } = await callUnary(h.runtime, 'PortForward', { pod_sandbox_id: web.id, port: [80] });
    const request = Buffer.from('GET / HTTP/1.0\r\n\r\n');
    let forwarded = '';
    await eventually('the page through port-forward', async () => (forwarded = (await wsForwardOnce(url, request, 1, 3000)).data.toString()).length > 0);
    assert.match(forwarded, /^HTTP\/1\.[01] 200/);
    assert.equal((await h.exec(server, ['echo', 'in-server'])).stdout, 'in-server\n');
    assert.equal((await h.exec(sidecar, ['wget', '-q', '-O', '-', 'http://127.0.0.1:80/'])).stdout, 'on-port-80\n');
    await callUnary(h.runtime, 'RemovePodSandbox', { pod_sandbox_id: web.id }, { timeoutMs: 60_000 });
  });

  test("a gVisor pod's net.* sysctls are set in its network namespace; others, which gVisor's kernel would ignore, are refused", async () => {
    await rejectsWithCode(h.runPod({ linux: { sysctls: { 'kernel.shm_rmid_forced': '1' } } }, HANDLER), status.INVALID_ARGUMENT, /sets no sysctl: kernel\.shm_rmid_forced cannot be applied/);
    const tuned = await h.runPod({ linux: { sysctls: { 'net.ipv4.ip_local_port_range': '40000 40010' } } }, HANDLER);
    const verbose = await callUnary(h.runtime, 'PodSandboxStatus', { pod_sandbox_id: tuned.id, verbose: true });
    const netnsPath = (JSON.parse(verbose.info['info'] ?? '{}') as { netnsPath?: string }).netnsPath ?? '';
    assert.ok(netnsPath, 'the pod has a network namespace');
    const { stdout } = await run('nsenter', [`--net=${netnsPath}`, '--', 'cat', '/proc/sys/net/ipv4/ip_local_port_range']);
    assert.equal(stdout.replace(/\s+/g, ' ').trim(), '40000 40010');
    await callUnary(h.runtime, 'RemovePodSandbox', { pod_sandbox_id: tuned.id }, { timeoutMs: 60_000 });
  });

  test('gVisor pods keep running through a SIGKILL of runtime-svc and are found again; a container created before it starts after it', async () => {
    const survivor = await sharedPidPod();
    const id = await h.runContainer(survivor, 'survivor', { command: ['sh', '-c', 'echo before; sleep 3600'] });
    const waiting = await h.createContainer(survivor, 'created-before-kill', { command: ['sh', '-c', 'echo started-after; sleep 3600'] });
    const never = await h.createContainer(survivor, 'never-started');
    const pid = await h.skiff.servicePid('runtime-svc');
    assert.ok(pid);
    process.kill(pid, 'SIGKILL');
    await h.skiff.waitForNewPid('runtime-svc', pid);
    await eventually('runtime-svc to answer again', async () => (await callUnary(h.runtime, 'Version', {}, { timeoutMs: 1000 }).catch(() => undefined)) !== undefined, 30_000);
    assert.equal((await h.podStatus(survivor.id)).state, 'SANDBOX_READY');
    assert.equal((await h.containerStatus(id)).state, 'CONTAINER_RUNNING');
    assert.equal((await h.exec(id, ['echo', 'after'])).stdout, 'after\n');
    assert.equal((await h.containerStatus(waiting)).state, 'CONTAINER_CREATED');
    await callUnary(h.runtime, 'StartContainer', { container_id: waiting }, { timeoutMs: 60_000 });
    assert.equal((await h.containerStatus(waiting)).state, 'CONTAINER_RUNNING');
    assert.equal((await h.exec(waiting, ['echo', 'late'])).stdout, 'late\n');
    await eventually('its first line in its log', async () => readFileSync((await h.containerStatus(waiting)).log_path, 'utf8').includes('stdout F started-after'));
    await callUnary(h.runtime, 'RemoveContainer', { container_id: never }, { timeoutMs: 60_000 });
    await eventually('nothing of the never-started container left', async () => placesOf(await h.inventory(), never).length === 0, 30_000);
    const stopped = await stop(id, 1);
    assert.equal(stopped.state, 'CONTAINER_EXITED');
    await callUnary(h.runtime, 'RemovePodSandbox', { pod_sandbox_id: survivor.id }, { timeoutMs: 60_000 });
  });

  test('a gVisor kernel that dies leaves its pod NOTREADY and its containers exited', async () => {
    const doomed = await sharedPidPod();
    const id = await h.runContainer(doomed, 'doomed');
    const verbose = await callUnary(h.runtime, 'PodSandboxStatus', { pod_sandbox_id: doomed.id, verbose: true });
    const sandboxPid = (JSON.parse(verbose.info['info'] ?? '{}') as { pid?: number }).pid ?? 0;
    assert.ok(sandboxPid > 0, 'the sandbox process is known');
    process.kill(sandboxPid, 'SIGKILL');
    await eventually('the pod to turn NOTREADY', async () => (await h.podStatus(doomed.id)).state === 'SANDBOX_NOTREADY', 15_000);
    const exited = await h.waitForExit(id, 15_000);
    assert.notEqual(exited.exit_code, 0);
    assert.ok(exited.reason, 'the exit has a reason');
    await callUnary(h.runtime, 'RemovePodSandbox', { pod_sandbox_id: doomed.id }, { timeoutMs: 60_000 });
  });
});

describe('runtime.default_handler = "runsc"', () => {
  test('a pod that names no handler runs under gVisor and is recorded so; one that asks for runc does not', async () => {
    const node = await startRuntimeHarness({ config: 'default_handler = "runsc"' });
    try {
      const unnamed = await node.runPod({}, '');
      assert.equal((await node.podStatus(unnamed.id)).runtime_handler, HANDLER);
      const inGvisor = await node.runContainer(unnamed, 'kernel', { command: ['sh', '-c', 'dmesg | head -n 1; sleep 3600'] });
      await eventually('the gVisor boot line in its log', async () => readFileSync((await node.containerStatus(inGvisor)).log_path, 'utf8').includes('Starting gVisor'));
      const runcPod = await node.runPod({}, 'runc');
      assert.equal((await node.podStatus(runcPod.id)).runtime_handler, 'runc');
      const onHost = await node.runContainer(runcPod, 'kernel');
      assert.equal((await node.exec(onHost, ['uname', '-r'])).stdout.trim(), HOST_RELEASE);
    } finally {
      await node.stop();
    }
  });
});
