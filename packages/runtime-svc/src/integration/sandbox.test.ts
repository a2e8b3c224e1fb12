import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { promises as fs } from 'node:fs';
import { join } from 'node:path';
import { allocatedIps, eventually, exists, podConfig, rejectsWith, TestDaemon, cgroupExistsAnywhere, isRoot } from '@skiff/test-support';
import { RUNTIME_MAIN } from './runtime-main.js';
import { runCommand } from '@skiff/common';
import { status } from '@grpc/grpc-js';
import { callUnary, type cri } from '@skiff/proto';
import { mountPoints } from '../mounts/mountinfo.js';

async function inPod(pid: number, ns: string[], args: string[]): Promise<string> {
  const r = await runCommand('nsenter', ['-t', String(pid), ...ns, ...args], { timeoutMs: 10_000 });
  assert.equal(r.code, 0, r.stderr);
  return r.stdout;
}

describe('pod sandboxes', { skip: !isRoot && 'needs root' }, () => {
  let d: TestDaemon;
  let logs: string;

  before(async () => {
    d = await TestDaemon.create({
      entry: RUNTIME_MAIN,
      network: true,
      runtimeToml: '[[runtime.handlers]]\nname = "alt"\nruntime_path = "/usr/sbin/runc"\n[[runtime.handlers]]\nname = "broken"\nruntime_path = "/bin/false"\n',
    });
    logs = join(d.base, 'logs');
    await d.start();
  });

  after(async () => {
    await d?.cleanup();
  });

  const sandboxDir = (id: string): string => join(d.root, 'runtime', 'sandboxes', id);

  async function verbose(id: string): Promise<{ status: cri.PodSandboxStatus__Output; info: { pid: number; pause: boolean; netnsPath: string } }> {
    const r = await callUnary(d.client, 'PodSandboxStatus', { pod_sandbox_id: id, verbose: true });
    return { status: r.status!, info: JSON.parse(r.info['info'] ?? '{}') as { pid: number; pause: boolean; netnsPath: string } };
  }

  it('runs a networked pod: catatonit in new namespaces with the pod hostname, DNS, hosts, /dev/shm, sysctls and host ports', async () => {
    const hostPort = 20000 + (process.pid % 20000);
    const dnatRules = async (): Promise<number> =>
      (await runCommand('iptables', ['-t', 'nat', '-S'], { timeoutMs: 10_000 })).stdout.split('\n').filter((l) => l.includes(`--dport ${hostPort} `)).length;
    const config = podConfig(logs, {
      hostname: 'web-0',
      dns_config: { servers: ['10.96.0.10'], searches: ['default.svc.cluster.local'], options: ['ndots:5'] },
      port_mappings: [
        { protocol: 'TCP', container_port: 80, host_port: hostPort },
        { protocol: 'TCP', container_port: 81, host_port: 0 },
      ],
      // Containers sharing a PID namespace: a pod with a pause, whose sysctls runc sets.
      linux: { sysctls: { 'net.ipv4.ip_unprivileged_port_start': '0' }, security_context: { namespace_options: { network: 'POD', pid: 'POD', ipc: 'POD' } } },
    });
    const before = BigInt(Date.now()) * 1_000_000n;
    const { pod_sandbox_id: id } = await callUnary(d.client, 'RunPodSandbox', { config });
    assert.match(id, /^[0-9a-f]{64}$/);
    const { status: s, info } = await verbose(id);
    assert.equal(s.state, 'SANDBOX_READY');
    assert.deepEqual(s.metadata, config.metadata);
    assert.deepEqual(s.labels, config.labels);
    assert.deepEqual(s.annotations, config.annotations);
    assert.equal(s.runtime_handler, '');
    assert.ok(BigInt(s.created_at) >= before && BigInt(s.created_at) <= BigInt(Date.now()) * 1_000_000n);
    assert.ok(s.network?.ip.startsWith(d.subnet.split('.').slice(0, 3).join('.')), s.network?.ip);
    assert.deepEqual(s.linux?.namespaces?.options, { network: 'POD', pid: 'POD', ipc: 'POD', target_id: '', userns_options: null });

    assert.equal((await fs.readFile(`/proc/${info.pid}/cmdline`, 'utf8')).split('\0')[0], '/catatonit');
    assert.equal((await inPod(info.pid, ['-u'], ['hostname'])).trim(), 'web-0');
    assert.equal((await inPod(info.pid, ['-n'], ['cat', '/proc/sys/net/ipv4/ip_unprivileged_port_start'])).trim(), '0');
    for (const ns of ['net', 'ipc', 'uts', 'pid']) {
      assert.notEqual(await fs.readlink(`/proc/${info.pid}/ns/${ns}`), await fs.readlink(`/proc/self/ns/${ns}`), `${ns} namespace is the pod's own`);
    }
    const dir = sandboxDir(id);
    assert.equal(await fs.readFile(join(dir, 'resolv.conf'), 'utf8'), 'search default.svc.cluster.local\nnameserver 10.96.0.10\noptions ndots:5\n');
    assert.match(await fs.readFile(join(dir, 'hosts'), 'utf8'), new RegExp(`^${s.network?.ip.replace(/\./g, '\\.')}\\tweb-0$`, 'm'));
    assert.ok((await mountPoints()).has(join(dir, 'shm')), '/dev/shm is a tmpfs of its own');
    assert.deepEqual(await allocatedIps(d.ipamDir), [s.network?.ip]);
    assert.ok((await dnatRules()) > 0, 'the host port is forwarded');

    // Stop twice: idempotent; the address, namespace and /dev/shm are released.
    await callUnary(d.client, 'StopPodSandbox', { pod_sandbox_id: id });
    await callUnary(d.client, 'StopPodSandbox', { pod_sandbox_id: id });
    const stopped = await verbose(id);
    assert.equal(stopped.status.state, 'SANDBOX_NOTREADY');
    assert.equal(stopped.status.network?.ip, '');
    assert.deepEqual(await allocatedIps(d.ipamDir), []);
    assert.equal(await dnatRules(), 0, 'the host port rules are gone');
    assert.equal(await exists(info.netnsPath), false);
    assert.equal((await mountPoints()).has(join(dir, 'shm')), false);

    await callUnary(d.client, 'RemovePodSandbox', { pod_sandbox_id: id });
    await rejectsWith(callUnary(d.client, 'PodSandboxStatus', { pod_sandbox_id: id }), status.NOT_FOUND, new RegExp(id));
    assert.ok(!(await callUnary(d.client, 'ListPodSandbox', {})).items.some((p) => p.id === id), 'a removed sandbox is not listed');
    // The name is free again at once, while the removed sandbox's cleanup may still run.
    const again = await callUnary(d.client, 'RunPodSandbox', { config });
    await eventually('the removed sandbox cleaned up', async () => !(await exists(dir)) && !(await cgroupExistsAnywhere(`${d.cgroupParent}/${id}`)));
    await callUnary(d.client, 'RemovePodSandbox', { pod_sandbox_id: again.pod_sandbox_id });
  });

  it("runs the kubelet's default pod without a pause: no runc, its IPC and UTS namespaces on files, its network in its stats, nothing left once removed", async () => {
    const config = podConfig(logs, { hostname: 'web-1', linux: { security_context: { namespace_options: { network: 'POD', pid: 'CONTAINER', ipc: 'POD' } } } });
    const { pod_sandbox_id: id } = await callUnary(d.client, 'RunPodSandbox', { config });
    const dir = sandboxDir(id);
    const { status: s, info } = await verbose(id);
    assert.equal(s.state, 'SANDBOX_READY');
    assert.deepEqual([info.pause, info.pid], [false, 0]);
    assert.equal(await exists(join(d.runDir, 'runc', id)), false, 'runc never ran');
    assert.equal(await exists(join(dir, 'pidns')), false, 'no PID namespace of its own');
    const points = await mountPoints();
    for (const file of ['ipcns', 'utsns', 'shm']) assert.ok(points.has(join(dir, file)), `${file} is mounted`);
    const name = await runCommand('nsenter', [`--uts=${join(dir, 'utsns')}`, 'hostname'], { timeoutMs: 10_000 });
    assert.equal(name.stdout.trim(), 'web-1');
    const { stats } = await callUnary(d.client, 'PodSandboxStats', { pod_sandbox_id: id });
    assert.ok(stats?.linux?.network?.interfaces.some((i) => i.name === 'eth0'), 'the pod network is read through its namespace');

    await callUnary(d.client, 'StopPodSandbox', { pod_sandbox_id: id });
    assert.equal((await verbose(id)).status.state, 'SANDBOX_NOTREADY');
    const stopped = await mountPoints();
    for (const file of ['ipcns', 'utsns', 'shm']) assert.ok(!stopped.has(join(dir, file)), `${file} is released`);
    assert.deepEqual(await allocatedIps(d.ipamDir), []);
    await callUnary(d.client, 'RemovePodSandbox', { pod_sandbox_id: id });
    await eventually('the removed sandbox cleaned up', async () => !(await exists(dir)));
    assert.deepEqual([...(await mountPoints())].filter((m) => m.includes(id)), []);
  });

  it('refuses a second sandbox with the same name, namespace, uid and attempt, naming the holder', async () => {
    const config = podConfig(logs);
    const { pod_sandbox_id: id } = await callUnary(d.client, 'RunPodSandbox', { config });
    try {
      await rejectsWith(callUnary(d.client, 'RunPodSandbox', { config }), status.ALREADY_EXISTS, new RegExp(id));
      const next = await callUnary(d.client, 'RunPodSandbox', { config: { ...config, metadata: { ...config.metadata, attempt: 1 } } });
      await callUnary(d.client, 'RemovePodSandbox', { pod_sandbox_id: next.pod_sandbox_id });
    } finally {
      await callUnary(d.client, 'RemovePodSandbox', { pod_sandbox_id: id });
    }
  });

  it('lists sandboxes by id, state and labels', async () => {
    const a = await callUnary(d.client, 'RunPodSandbox', { config: podConfig(logs, { labels: { group: 'x', role: 'a' } }) });
    const b = await callUnary(d.client, 'RunPodSandbox', { config: podConfig(logs, { labels: { group: 'x', role: 'b' } }) });
    try {
      await callUnary(d.client, 'StopPodSandbox', { pod_sandbox_id: b.pod_sandbox_id });
      const list = async (filter: cri.PodSandboxFilter): Promise<string[]> => ((await callUnary(d.client, 'ListPodSandbox', { filter })).items ?? []).map((i) => i.id);
      assert.deepEqual(await list({ label_selector: { group: 'x' } }), [a.pod_sandbox_id, b.pod_sandbox_id]);
      assert.deepEqual(await list({ label_selector: { group: 'x', role: 'b' } }), [b.pod_sandbox_id]);
      assert.deepEqual(await list({ label_selector: { group: 'x' }, state: { state: 'SANDBOX_READY' } }), [a.pod_sandbox_id]);
      assert.deepEqual(await list({ label_selector: { group: 'x' }, state: { state: 'SANDBOX_NOTREADY' } }), [b.pod_sandbox_id]);
      assert.deepEqual(await list({ id: a.pod_sandbox_id.slice(0, 12) }), [a.pod_sandbox_id]);
      assert.deepEqual(await list({ id: 'ffff' + a.pod_sandbox_id.slice(4), label_selector: { group: 'nope' } }), []);
      const all = (await callUnary(d.client, 'ListPodSandbox', {})).items ?? [];
      const entry = all.find((i) => i.id === b.pod_sandbox_id);
      assert.equal(entry?.state, 'SANDBOX_NOTREADY');
      assert.equal(entry?.annotations['skiff.test/annotation']?.startsWith('value-'), true);
    } finally {
      for (const id of [a.pod_sandbox_id, b.pod_sandbox_id]) await callUnary(d.client, 'RemovePodSandbox', { pod_sandbox_id: id });
    }
  });

  it('runs catatonit with no monitor, under the seccomp profile the pod names, and is not ready once it is gone', async () => {
    const seccompMode = async (pid: number): Promise<string> => /^Seccomp:\s+(\d)$/m.exec(await fs.readFile(`/proc/${pid}/status`, 'utf8'))?.[1] ?? '';
    const confined = podConfig(logs, { linux: { security_context: { seccomp: { profile_type: 'RuntimeDefault', localhost_ref: '' } } } });
    const plain = podConfig(logs);
    const { pod_sandbox_id: a } = await callUnary(d.client, 'RunPodSandbox', { config: confined });
    const { pod_sandbox_id: b } = await callUnary(d.client, 'RunPodSandbox', { config: plain });
    try {
      const pidA = (await verbose(a)).info.pid;
      const pidB = (await verbose(b)).info.pid;
      assert.equal(await seccompMode(pidA), '2', 'RuntimeDefault filters the pause process');
      assert.equal(await seccompMode(pidB), '0', 'no profile named: unconfined');
      const specOf = async (id: string): Promise<{ linux: { seccomp?: unknown } }> => JSON.parse(await fs.readFile(join(sandboxDir(id), 'config.json'), 'utf8')) as { linux: { seccomp?: unknown } };
      assert.ok((await specOf(a)).linux.seccomp);
      assert.equal((await specOf(b)).linux.seccomp, undefined);

      const monitors: string[] = [];
      for (const name of await fs.readdir('/proc')) {
        const argv = await fs.readFile(`/proc/${name}/cmdline`, 'utf8').catch(() => '');
        if (argv.split('\0')[0]?.endsWith('conmon') && (argv.includes(a) || argv.includes(b))) monitors.push(name);
      }
      assert.deepEqual(monitors, [], 'the pause process runs without conmon');

      process.kill(pidA, 'SIGKILL');
      const deadline = Date.now() + 10_000;
      while ((await verbose(a)).status.state !== 'SANDBOX_NOTREADY') {
        assert.ok(Date.now() < deadline, 'the sandbox turns NOTREADY once its pause process is gone');
        await new Promise((r) => setTimeout(r, 50));
      }
      assert.equal((await verbose(b)).status.state, 'SANDBOX_READY');
      await rejectsWith(
        callUnary(d.client, 'CreateContainer', { pod_sandbox_id: a, config: { metadata: { name: 'late', attempt: 0 }, image: { image: 'busybox' } }, sandbox_config: confined }),
        status.FAILED_PRECONDITION,
        /not ready/,
      );
    } finally {
      for (const id of [a, b]) await callUnary(d.client, 'RemovePodSandbox', { pod_sandbox_id: id });
    }
    for (const id of [a, b]) await eventually(`the cgroup of ${id} removed`, async () => !(await cgroupExistsAnywhere(`${d.cgroupParent}/${id}`)));
  });

  it('runs a host-network pod without a namespace, address or pause process of its own, under a named handler', async () => {
    const config = podConfig(logs, { hostname: '', linux: { security_context: { namespace_options: { network: 'NODE', pid: 'NODE', ipc: 'NODE' } } } });
    const { pod_sandbox_id: id } = await callUnary(d.client, 'RunPodSandbox', { config, runtime_handler: 'alt' });
    try {
      const { status: s, info } = await verbose(id);
      assert.equal(s.state, 'SANDBOX_READY');
      assert.equal(s.runtime_handler, 'alt');
      assert.equal(s.network?.ip, '');
      assert.equal(info.netnsPath, '');
      // Nothing of its own to hold: no pause, so nothing its runtime runs, and no namespace file.
      assert.equal(info.pause, false);
      assert.equal(info.pid, 0);
      assert.equal(await exists(join(d.runDir, 'runtimes', 'alt', id)), false, 'no runc state');
      for (const ns of ['ipcns', 'utsns', 'pidns']) assert.equal(await exists(join(sandboxDir(id), ns)), false, ns);
      assert.equal(await fs.readFile(join(sandboxDir(id), 'hosts'), 'utf8'), await fs.readFile('/etc/hosts', 'utf8'));
    } finally {
      await callUnary(d.client, 'RemovePodSandbox', { pod_sandbox_id: id });
    }
  });

  it('refuses bad requests before making anything, and undoes everything when a late step fails', async () => {
    await rejectsWith(callUnary(d.client, 'RunPodSandbox', { config: podConfig(logs), runtime_handler: 'kata' }), status.INVALID_ARGUMENT, /"kata"/);
    await rejectsWith(callUnary(d.client, 'RunPodSandbox', { config: podConfig(logs, { linux: { sysctls: { 'kernel.panic': '1' } } }) }), status.INVALID_ARGUMENT, /kernel\.panic/);
    await rejectsWith(callUnary(d.client, 'RunPodSandbox', { config: { metadata: { name: 'x' } } }), status.INVALID_ARGUMENT, /metadata\.namespace/);
    // The "broken" handler's runtime fails at create: after the network was attached and /dev/shm mounted.
    const config = podConfig(logs);
    // Earlier removals' cleanups are done: what is left below is this failure's.
    await eventually('earlier removals cleaned up', async () => (await fs.readdir(join(d.root, 'runtime', 'sandboxes'))).length === 0);
    await rejectsWith(callUnary(d.client, 'RunPodSandbox', { config, runtime_handler: 'broken' }), status.INTERNAL);
    assert.deepEqual(await fs.readdir(join(d.root, 'runtime', 'sandboxes')), []);
    assert.deepEqual(await allocatedIps(d.ipamDir), [], 'the address was released');
    assert.deepEqual(await fs.readdir(join(d.runDir, 'netns')), []);
    assert.deepEqual(await fs.readdir(join(d.root, 'cni', 'results')), []);
    assert.deepEqual([...(await mountPoints())].filter((m) => m.startsWith(d.root)), []);
    // Its name was released too.
    const { pod_sandbox_id: id } = await callUnary(d.client, 'RunPodSandbox', { config });
    await callUnary(d.client, 'RemovePodSandbox', { pod_sandbox_id: id });
  });

  it('treats stop and remove of unknown sandboxes as done, and status of one as NotFound', async () => {
    await callUnary(d.client, 'StopPodSandbox', { pod_sandbox_id: 'a'.repeat(64) });
    await callUnary(d.client, 'RemovePodSandbox', { pod_sandbox_id: 'a'.repeat(64) });
    await rejectsWith(callUnary(d.client, 'PodSandboxStatus', { pod_sandbox_id: 'a'.repeat(64) }), status.NOT_FOUND);
    await rejectsWith(callUnary(d.client, 'StopPodSandbox', { pod_sandbox_id: '' }), status.INVALID_ARGUMENT);
  });
});
