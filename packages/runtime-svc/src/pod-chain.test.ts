/**
 * The whole chain on this machine: a sandbox (catatonit -P under runc, via conmon) in a network
 * namespace wired by CNI, a busybox container joining its namespaces and logging to journald,
 * both started by a process that then exits, then stopped, read back and cleaned up.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { promises as fs } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { promisify } from 'node:util';
import { eventually, makeBusyboxRootfs, isRoot, removeCgroupEverywhere, uniqueContainerId, uniqueName } from '@skiff/test-support';
import { ensureJournald, isProcessAlive, bridgeNetworkConfig, chooseSubnet, hostRoutes, LOOPBACK_NETWORK, runCommand } from '@skiff/common';
import { CniRunner } from './cni/cni.js';
import { NetnsManager } from './cni/netns.js';
import { podIpsFromResult } from './cni/result.js';
import type { ContainerMonitorOptions, MonitoredContainer } from './conmon/conmon.js';
import { execSync } from './conmon/conmon-exec-sync.js';
import { readExitCode } from './conmon/exit-file.js';
import { journalMessage, readJournal } from './journal/journald.js';
import { readHostFacts, type HostFacts } from './oci/host-facts.js';
import { Runc } from './oci/runc.js';
import { buildSpec, type ContainerSpecInput } from './oci/spec-builder.js';
import { stopContainer } from './oci/stop-container.js';

const execFileAsync = promisify(execFile);

/**
 * Run in a separate Node process that exits right after: creates each container through conmon
 * and starts it. Prints the monitors as JSON.
 */
const STARTER = `
const [conmonUrl, runcUrl, json] = process.argv.slice(1);
const { createContainerWithMonitor } = await import(conmonUrl);
const { Runc } = await import(runcUrl);
const { runcRoot, containers } = JSON.parse(json);
const runc = new Runc({ root: runcRoot });
const out = [];
for (const options of containers) {
  out.push(await createContainerWithMonitor(options));
  await runc.start(options.id);
}
process.stdout.write(JSON.stringify(out));
`;

async function startDetached(runcRoot: string, containers: ContainerMonitorOptions[]): Promise<{ monitors: MonitoredContainer[]; starterPid: number }> {
  const conmonUrl = new URL('./conmon/conmon.js', import.meta.url).href;
  const runcUrl = new URL('./oci/runc.js', import.meta.url).href;
  const child = execFileAsync(process.execPath, ['--input-type=module', '-e', STARTER, conmonUrl, runcUrl, JSON.stringify({ runcRoot, containers })], {
    timeout: 60_000,
  });
  const starterPid = child.child.pid!;
  const { stdout } = await child;
  return { monitors: JSON.parse(stdout) as MonitoredContainer[], starterPid };
}

describe('pod chain: CNI netns + catatonit sandbox + busybox container via conmon, logs in journald', { skip: !isRoot && 'needs root' }, () => {
  const name = uniqueName('skp');
  const runDir = join('/run', `skiff-test-${name}`);
  const cgroupParent = `skiff-test-${name}`;
  const bridge = `sk${name.slice(-8)}`;
  const exitDir = join(runDir, 'exits');
  const runc = new Runc({ root: join(runDir, 'runc') });
  const netns = new NetnsManager(join(runDir, 'netns'));
  let cni: CniRunner;
  let base: string;
  let facts: HostFacts;
  const containerIds: string[] = [];
  const cleanups: (() => Promise<void>)[] = [];

  before(async () => {
    base = await fs.mkdtemp(join(tmpdir(), 'skiff-pod-test-'));
    cni = new CniRunner({ cacheDir: join(base, 'cni-cache') });
    facts = await readHostFacts();
    await ensureJournald();
  });

  after(async () => {
    for (const id of [...containerIds].reverse()) await runc.delete(id, { force: true }).catch(() => undefined);
    for (const cleanup of cleanups.reverse()) await cleanup().catch(() => undefined);
    for (const entry of await netns.list()) await netns.remove(entry.name);
    await netns.releaseDir().catch(() => undefined);
    await runCommand('ip', ['link', 'del', bridge], { timeoutMs: 10_000 });
    await removeCgroupEverywhere(cgroupParent);
    await fs.rm(runDir, { recursive: true, force: true });
    await fs.rm(base, { recursive: true, force: true });
  });

  async function bundleFor(id: string, input: ContainerSpecInput): Promise<ContainerMonitorOptions & { logPath: string }> {
    const bundle = join(base, id);
    await fs.mkdir(bundle, { recursive: true });
    await fs.writeFile(join(bundle, 'config.json'), JSON.stringify(buildSpec(input, facts)));
    containerIds.push(id);
    const logPath = join(bundle, 'container.log');
    return {
      runtime: { ...runc.binaryForConmon, kind: 'oci' },
      id,
      bundle,
      containerPidFile: join(bundle, 'pidfile'),
      conmonPidFile: join(bundle, 'conmon.pid'),
      exitDir,
      persistDir: join(bundle, 'persist'),
      socketDir: join(runDir, 'attach'),
      logDrivers: [{ driver: 'k8s-file', path: logPath }],
      logPath,
    };
  }

  it('runs, survives its starter, logs to the journal, stops with exit codes and cleans up', async () => {
    // 1. The pod's network namespace, wired by CNI.
    const podId = uniqueContainerId('pod');
    const nsPath = await netns.create(podId);
    const third = (process.pid + 100) % 200;
    const subnet = chooseSubnet(await hostRoutes(), [0, 1, 2].map((i) => `10.198.${(third + i * 50) % 250}.0/24`), bridge);
    assert.ok(subnet);
    const net = bridgeNetworkConfig({ name: `net-${name}`, bridge, subnet, ipamDataDir: join(base, 'ipam') });
    const attachment = { containerId: podId, netns: nsPath };
    cleanups.push(() => cni.del(LOOPBACK_NETWORK, { ...attachment, ifName: 'lo' }), () => cni.del(net, attachment));
    await cni.add(LOOPBACK_NETWORK, { ...attachment, ifName: 'lo' });
    const podIp = podIpsFromResult(await cni.add(net, attachment))[0]!.ip;

    // 2. The sandbox: catatonit -P as PID 1 of new PID/IPC/UTS namespaces, in the pod netns.
    const sandboxRootfs = join(base, 'sandbox-rootfs');
    await fs.mkdir(sandboxRootfs, { recursive: true });
    const sandbox = await bundleFor(podId, {
      rootfs: sandboxRootfs,
      readonlyRootfs: true,
      args: ['/catatonit', '-P'],
      hostname: 'chain-pod',
      mounts: [{ containerPath: '/catatonit', hostPath: '/usr/bin/catatonit', readonly: true }],
      namespaces: { network: { mode: 'join', path: nsPath } },
      cgroupsPath: `/${cgroupParent}/${podId}`,
      oomScoreAdj: -998,
      capabilities: { drop: ['ALL'] },
      seccomp: { kind: 'runtime-default' },
    });
    const first = await startDetached(runc.root, [sandbox]);
    const sandboxPid = first.monitors[0]!.containerPid;

    // 3. Containers joining the sandbox's namespaces.
    const rootfs = join(base, 'rootfs');
    await makeBusyboxRootfs(rootfs);
    const joinSandbox: ContainerSpecInput['namespaces'] = {
      network: { mode: 'join', path: nsPath },
      ipc: { mode: 'join', path: `/proc/${sandboxPid}/ns/ipc` },
      uts: { mode: 'join', path: `/proc/${sandboxPid}/ns/uts` },
      pid: { mode: 'join', path: `/proc/${sandboxPid}/ns/pid` },
    };
    const appId = uniqueContainerId('app');
    const app = await bundleFor(appId, {
      rootfs,
      args: [
        'sh',
        '-c',
        'echo "hello from $(hostname) ip=$(ip -o -4 addr show eth0 | awk \'{print $4}\') pid1=$(cat /proc/1/cmdline)"; ' +
          'trap "echo stopping; exit 7" TERM; while true; do sleep 0.1; done',
      ],
      namespaces: joinSandbox,
      cgroupsPath: `/${cgroupParent}/${appId}`,
      seccomp: { kind: 'runtime-default' },
    });
    app.logDrivers.push({ driver: 'journald' });
    app.name = 'chain-app';
    app.logTag = `skiff-chain-${name}`;
    const stubbornId = uniqueContainerId('stub');
    const stubborn = await bundleFor(stubbornId, {
      rootfs,
      args: ['sh', '-c', 'trap "" TERM; while true; do sleep 0.1; done'],
      namespaces: joinSandbox,
      cgroupsPath: `/${cgroupParent}/${stubbornId}`,
    });
    const second = await startDetached(runc.root, [app, stubborn]);

    // 4. The starters are gone; the containers and their monitors are not.
    for (const pid of [first.starterPid, second.starterPid]) assert.equal(isProcessAlive(pid), false);
    const all = [...first.monitors, ...second.monitors];
    for (const m of all) {
      assert.ok(isProcessAlive(m.containerPid), `container ${m.containerPid} runs`);
      assert.ok(isProcessAlive(m.conmonPid), `conmon ${m.conmonPid} runs`);
      assert.match(await fs.readFile(`/proc/${m.containerPid}/status`, 'utf8'), new RegExp(`^PPid:\\s+${m.conmonPid}$`, 'm'));
    }
    for (const id of containerIds) assert.equal((await runc.state(id)).status, 'running');
    assert.equal((await fs.readFile(`/proc/${sandboxPid}/oom_score_adj`, 'utf8')).trim(), String(facts.oomScoreAdj), 'raised to the daemon’s own');

    // 5. The container's output, in the journal with conmon's fields, and in the CRI log file.
    const expected = `hello from chain-pod ip=${podIp}/${subnet.split('/')[1]} pid1=/catatonit-P`;
    let entries: Awaited<ReturnType<typeof readJournal>> = [];
    for (let i = 0; i < 100 && !entries.some((e) => journalMessage(e).includes('hello from')); i++) {
      await sleep(100);
      entries = await readJournal({ CONTAINER_ID_FULL: appId });
    }
    const hello = entries.find((e) => journalMessage(e).includes('hello from'));
    assert.ok(hello, 'the line reached the journal');
    assert.equal(journalMessage(hello).replace(/\0/g, '').trim(), expected);
    assert.equal(hello['CONTAINER_ID_FULL'], appId);
    assert.equal(hello['CONTAINER_ID'], appId.slice(0, 12));
    assert.equal(hello['CONTAINER_NAME'], 'chain-app');
    assert.equal(hello['CONTAINER_TAG'], `skiff-chain-${name}`);
    assert.equal(hello['SYSLOG_IDENTIFIER'], `skiff-chain-${name}`);
    assert.match(await fs.readFile(app.logPath, 'utf8'), /stdout F hello from chain-pod/);

    // 6. Exec in the pod, through conmon.
    const spec = JSON.parse(await fs.readFile(join(app.bundle, 'config.json'), 'utf8')) as { process: Parameters<typeof execSync>[0]['process'] };
    const exec = await execSync({ runtime: { ...runc.binaryForConmon, kind: 'oci' }, id: appId, process: { ...spec.process, args: ['hostname'] }, timeoutSeconds: 10 });
    assert.deepEqual(exec, { exitCode: 0, stdout: 'chain-pod\n', stderr: '', stdoutBytes: Buffer.from('chain-pod\n'), stderrBytes: Buffer.alloc(0), outputCut: false, timedOut: false, abandoned: false });

    // 7. Stop: graceful (exit code from the trap), forced (SIGKILL after the grace period), then the sandbox.
    assert.equal(await stopContainer(runc, appId, { exitDir, timeoutMs: 10_000 }), 7);
    assert.equal(await stopContainer(runc, stubbornId, { exitDir, timeoutMs: 500 }), 137);
    const sandboxExit = await stopContainer(runc, podId, { exitDir, timeoutMs: 10_000 });
    assert.equal(sandboxExit, 0, 'catatonit exits 0 on SIGTERM');
    assert.equal(await readExitCode(exitDir, podId), 0);
    for (const m of all) {
      await eventually(`conmon ${m.conmonPid} exited`, async () => !isProcessAlive(m.conmonPid));
      assert.equal(isProcessAlive(m.containerPid), false);
    }

    // 8. Clean up everything and check it is gone.
    for (const id of [appId, stubbornId, podId]) await runc.delete(id);
    assert.deepEqual(await runc.list(), []);
    await cni.del(net, attachment);
    await cni.del(LOOPBACK_NETWORK, { ...attachment, ifName: 'lo' });
    await netns.remove(podId);
    assert.deepEqual(await netns.list(), []);
  });
});
