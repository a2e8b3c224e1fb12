import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { promises as fs } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { eventually, makeBusyboxRootfs, isRoot, removeCgroupEverywhere, uniqueContainerId, uniqueName } from '@skiff/test-support';
import { isProcessAlive, parseConmonMessage as parseSyncMessage, parseCriLog as parseCriLogBytes, reassembleConmonLog as splitCriLogStreamBytes, runCommandsThroughSpawnServer, stopSpawnServer } from '@skiff/common';
import { readHostFacts, type HostFacts } from '../oci/host-facts.js';
import { Runc } from '../oci/runc.js';
import { buildSpec, type ContainerSpecInput } from '../oci/spec-builder.js';
import type { Spec } from '../oci/runtime-spec.js';
import { stopContainer } from '../oci/stop-container.js';
import { ConmonError, containerMonitorArgs, createContainerWithMonitor, removeMonitorFiles, type MonitoredContainer } from './conmon.js';
import { execSync } from './conmon-exec-sync.js';
import { EXEC_START_ALLOWANCE_MS } from './exec-deadline.js';
import { readExitCode, waitForExitCode, wasOomKilled } from './exit-file.js';

const parseCriLog = (log: string) => parseCriLogBytes(Buffer.from(log));

/** Each stream's text, as ExecSync reads conmon's log. */
function splitCriLogStreams(log: string): { stdout: string; stderr: string } {
  const { stdout, stderr } = splitCriLogStreamBytes(Buffer.from(log));
  return { stdout: stdout.toString('utf8'), stderr: stderr.toString('utf8') };
}

describe('conmon protocol pieces', () => {
  it('parses sync messages of every API flavour', () => {
    assert.deepEqual(parseSyncMessage('{"pid": 42}'), { value: 42 });
    assert.deepEqual(parseSyncMessage('{"exit_code": 3}'), { value: 3 });
    assert.deepEqual(parseSyncMessage('{"data": -1, "message": "boom"}'), { value: -1, message: 'boom' });
    assert.throws(() => parseSyncMessage('nope'), /unreadable/);
  });

  it('parses CRI log records and rebuilds the streams', () => {
    const log = [
      '2024-01-01T00:00:00.000000001Z stdout F hello',
      '2024-01-01T00:00:00.000000002Z stderr P par',
      '2024-01-01T00:00:00.000000003Z stderr F tial',
      '2024-01-01T00:00:00.000000004Z stdout F ',
      '',
    ].join('\n');
    assert.equal(parseCriLog(log).length, 4);
    assert.deepEqual(splitCriLogStreams(log), { stdout: 'hello\n\n', stderr: 'partial\n' });
    assert.deepEqual(splitCriLogStreamBytes(Buffer.from(log)), { stdout: Buffer.from('hello\n\n'), stderr: Buffer.from('partial\n') });
    const binary = Buffer.concat([Buffer.from('2024-01-01T00:00:00Z stdout P '), Buffer.from([0xff, 0xfe, 0x20]), Buffer.from('\n2024-01-01T00:00:01Z stdout F x\n')]);
    assert.deepEqual(splitCriLogStreamBytes(binary).stdout, Buffer.from([0xff, 0xfe, 0x20, 0x78, 0x0a]));
  });

  it('builds conmon arguments and refuses what conmon would reject', () => {
    const base = {
      id: 'c'.repeat(20),
      bundle: '/b',
      containerPidFile: '/b/pid',
      conmonPidFile: '/b/conmon.pid',
      exitDir: '/e',
      socketDir: '/s',
      runtime: { path: '/usr/sbin/runc', root: '/run/skiff/runc', args: [], kind: 'oci' as const },
    };
    const args = containerMonitorArgs({ ...base, logDrivers: [{ driver: 'journald' }], logTag: 't', terminal: true, stdin: true, leaveStdinOpen: true });
    assert.ok(args.join(' ').includes('--log-path journald: --log-tag t --terminal --stdin --leave-stdin-open'));
    assert.ok(args.includes('--root=/run/skiff/runc'));
    assert.throws(() => containerMonitorArgs({ ...base, logDrivers: [] }), ConmonError);
    assert.throws(() => containerMonitorArgs({ ...base, logDrivers: [{ driver: 'k8s-file', path: '/l' }], logTag: 't' }), ConmonError);
    assert.throws(() => containerMonitorArgs({ ...base, logDrivers: [{ driver: 'k8s-file', path: '/a:b' }] }), ConmonError);
  });
});

describe('conmon with the real runc', { skip: !isRoot && 'needs root' }, () => {
  const name = uniqueName('skc');
  const cgroupParent = `skiff-test-${name}`;
  const runDir = join('/run', `skiff-test-${name}`);
  let base: string;
  let rootfs: string;
  let runc: Runc;
  let facts: HostFacts;
  const created: string[] = [];
  const exitDir = join(runDir, 'exits');

  before(async () => {
    base = await fs.mkdtemp(join(tmpdir(), 'skiff-conmon-test-'));
    rootfs = join(base, 'rootfs');
    await makeBusyboxRootfs(rootfs);
    runc = new Runc({ root: join(runDir, 'runc') });
    facts = await readHostFacts();
  });

  after(async () => {
    for (const id of created) await runc.delete(id, { force: true }).catch(() => undefined);
    await removeCgroupEverywhere(cgroupParent);
    await fs.rm(runDir, { recursive: true, force: true });
    await fs.rm(base, { recursive: true, force: true });
  });

  async function start(prefix: string, overrides: Partial<ContainerSpecInput>): Promise<{ id: string; bundle: string; spec: Spec; monitor: MonitoredContainer }> {
    const id = uniqueContainerId(prefix);
    const bundle = join(base, id);
    await fs.mkdir(bundle, { recursive: true });
    const spec = buildSpec({ rootfs, args: ['sleep', '3600'], cgroupsPath: `/${cgroupParent}/${id}`, ...overrides }, facts);
    await fs.writeFile(join(bundle, 'config.json'), JSON.stringify(spec));
    created.push(id);
    const monitor = await createContainerWithMonitor({
      runtime: { ...runc.binaryForConmon, kind: 'oci' },
      id,
      name: prefix,
      bundle,
      containerPidFile: join(bundle, 'pidfile'),
      conmonPidFile: join(bundle, 'conmon.pid'),
      exitDir,
      persistDir: join(bundle, 'persist'),
      socketDir: join(runDir, 'sockets'),
      logDrivers: [{ driver: 'k8s-file', path: join(bundle, 'container.log') }],
    });
    await runc.start(id);
    return { id, bundle, spec, monitor };
  }

  it('creates a container under a detached conmon that logs its output and records its exit', async () => {
    const { id, bundle, monitor } = await start('logs', {
      args: ['sh', '-c', 'echo out-line; echo err-line >&2; trap "echo bye; exit 7" TERM; while true; do sleep 0.1; done'],
    });
    assert.ok(isProcessAlive(monitor.conmonPid));
    const status = await fs.readFile(`/proc/${monitor.containerPid}/status`, 'utf8');
    assert.match(status, new RegExp(`^PPid:\\s+${monitor.conmonPid}$`, 'm'), 'the container is conmon’s child, not ours');
    const conmonStatus = await fs.readFile(`/proc/${monitor.conmonPid}/status`, 'utf8');
    assert.doesNotMatch(conmonStatus, new RegExp(`^PPid:\\s+${process.pid}$`, 'm'), 'conmon is not our child either');

    let log = '';
    await eventually('the error line reached the log', async () => (log = await fs.readFile(join(bundle, 'container.log'), 'utf8').catch(() => '')).includes('err-line'));
    assert.deepEqual(splitCriLogStreams(log), { stdout: 'out-line\n', stderr: 'err-line\n' });

    assert.equal(await readExitCode(exitDir, id), undefined);
    const code = await stopContainer(runc, id, { exitDir, timeoutMs: 10_000 });
    assert.equal(code, 7);
    assert.equal((await fs.readFile(join(bundle, 'persist', 'exit'), 'utf8')).trim(), '7');
    await eventually('conmon exits with its container', async () => !isProcessAlive(monitor.conmonPid));
    assert.match(await fs.readFile(join(bundle, 'container.log'), 'utf8'), /stdout F bye/);
    assert.equal(await wasOomKilled(join(bundle, 'persist')), false);
    await runc.delete(id);
    await removeMonitorFiles({ id, exitDir, socketDir: join(runDir, 'sockets') });
    assert.equal(await readExitCode(exitDir, id), undefined);
    await assert.rejects(fs.lstat(join(runDir, 'sockets', id)), /ENOENT/);
  });

  it('creates the same way through the spawn helper, and reports runc create failures the same way', async () => {
    assert.equal(runCommandsThroughSpawnServer(), true);
    try {
      const { id, monitor } = await start('helper', { args: ['sleep', '3600'] });
      assert.ok(isProcessAlive(monitor.conmonPid));
      const status = await fs.readFile(`/proc/${monitor.containerPid}/status`, 'utf8');
      assert.match(status, new RegExp(`^PPid:\\s+${monitor.conmonPid}$`, 'm'), 'the container is conmon’s child');
      assert.equal(await stopContainer(runc, id, { exitDir, timeoutMs: 0 }), 137);
      await runc.delete(id);
      await assert.rejects(
        start('helper-broken', { args: ['/no/such/binary'] }),
        (err: unknown) => err instanceof ConmonError && /runc could not create/.test(err.message) && /no such file or directory|not found/.test(err.message),
      );
      await runc.delete(created[created.length - 1]!, { force: true });
    } finally {
      stopSpawnServer();
    }
  });

  it('records an OOM kill', async () => {
    const { id, bundle } = await start('oom', {
      args: ['sh', '-c', 'dd if=/dev/zero of=/dev/null bs=64M count=1'],
      resources: { memoryLimitBytes: 16 << 20 },
    });
    assert.equal(await waitForExitCode(exitDir, id, 10_000), 137);
    await eventually('the OOM kill was recorded', () => wasOomKilled(join(bundle, 'persist')));
    await runc.delete(id);
  });

  it('escalates to SIGKILL when the stop signal is ignored', async () => {
    // sh as PID 1 has no default action for SIGTERM: it ignores it.
    const { id } = await start('stubborn', { args: ['sh', '-c', 'while true; do sleep 0.1; done'] });
    const started = Date.now();
    const code = await stopContainer(runc, id, { exitDir, timeoutMs: 500 });
    assert.equal(code, 137);
    assert.ok(Date.now() - started < 20_000);
    await runc.delete(id);
  });

  async function execSyncBehaves(prefix: string): Promise<void> {
    const { id, spec } = await start(prefix, {});
    const proc = (script: string): Spec['process'] => ({ ...spec.process, args: ['sh', '-c', script] });

    const plain = await execSync({ runtime: { ...runc.binaryForConmon, kind: 'oci' }, id, process: proc('echo to-out; echo to-err >&2; exit 3'), timeoutSeconds: 10 });
    assert.deepEqual(plain, {
      exitCode: 3,
      stdout: 'to-out\n',
      stderr: 'to-err\n',
      stdoutBytes: Buffer.from('to-out\n'),
      stderrBytes: Buffer.from('to-err\n'),
      outputCut: false,
      timedOut: false,
      abandoned: false,
    });

    let t = Date.now();
    const background = await execSync({ runtime: { ...runc.binaryForConmon, kind: 'oci' }, id, process: proc('sleep 30 & echo started'), timeoutSeconds: 10 });
    assert.equal(background.exitCode, 0);
    assert.equal(background.stdout, 'started\n');
    assert.ok(Date.now() - t < 20_000, `a background process held the exec for ${Date.now() - t} ms`);

    // Several runs, because conmon's whole-second timer lands at a different offset each time.
    for (let run = 0; run < 3; run++) {
      t = performance.now();
      const slow = await execSync({ runtime: { ...runc.binaryForConmon, kind: 'oci' }, id, process: proc('echo before; sleep 50 & exec sleep 60'), timeoutSeconds: 1 });
      const took = performance.now() - t;
      assert.equal(slow.timedOut, true);
      assert.equal(slow.exitCode, -1);
      assert.equal(slow.stdout, 'before\n', 'output written before the timeout is kept');
      assert.ok(took >= 1000 && took < 20_000, `a 1 s timeout took ${Math.round(took)} ms`);
    }
    const remaining = await execSync({ runtime: { ...runc.binaryForConmon, kind: 'oci' }, id, process: proc('ps -o args | grep -c "^sleep [56]0"'), timeoutSeconds: 10 });
    assert.equal(remaining.stdout.trim(), '0', 'the timed-out command and its background child were killed');

    // The caller goes away (no timeout of its own): the command and its child are killed as at a timeout.
    const gone = new AbortController();
    const abandoned = execSync({ runtime: { ...runc.binaryForConmon, kind: 'oci' }, id, process: proc('sleep 70 & exec sleep 80'), timeoutSeconds: 0, signal: gone.signal });
    setTimeout(() => gone.abort(), 500);
    const result = await abandoned;
    assert.deepEqual([result.abandoned, result.timedOut], [true, false]);
    const left = await execSync({ runtime: { ...runc.binaryForConmon, kind: 'oci' }, id, process: proc('ps -o args | grep -c "^sleep [78]0"'), timeoutSeconds: 10 });
    assert.equal(left.stdout.trim(), '0', 'the abandoned command and its background child were killed');
    assert.equal((await execSync({ runtime: { ...runc.binaryForConmon, kind: 'oci' }, id, process: proc('true'), timeoutSeconds: 10, signal: gone.signal })).abandoned, true, 'not started for a caller already gone');

    await assert.rejects(
      execSync({ runtime: { ...runc.binaryForConmon, kind: 'oci' }, id, process: { ...spec.process, args: ['/no/such/cmd'] }, timeoutSeconds: 10 }),
      (err: unknown) => err instanceof ConmonError && /no such file|not found/.test(err.message),
    );
    await stopContainer(runc, id, { exitDir, timeoutMs: 0 });
    await runc.delete(id);
  }

  it('execSync: exit code, separate streams, background processes, timeouts', () => execSyncBehaves('exec'));

  it("execSync's timeout runs from the command's start: a conmon slow to start does not time out a command that takes less", async () => {
    const { id, spec } = await start('exec-slow-start', {});
    // conmon as a busy node starts it: 1.2 s late.
    const conmonPath = join(base, 'slow-conmon');
    await fs.writeFile(conmonPath, '#!/bin/sh\nsleep 1.2\nexec /usr/bin/conmon "$@"\n', { mode: 0o755 });
    const t = performance.now();
    const result = await execSync({ conmonPath, runtime: { ...runc.binaryForConmon, kind: 'oci' }, id, process: { ...spec.process, args: ['sh', '-c', 'sleep 1; echo done'] }, timeoutSeconds: 2 });
    assert.deepEqual([result.timedOut, result.exitCode, result.stdout], [false, 0, 'done\n'], `took ${Math.round(performance.now() - t)} ms`);
    // A command that outlasts its timeout still ends within the timeout and the start-up allowance.
    const t2 = performance.now();
    const slow = await execSync({ conmonPath, runtime: { ...runc.binaryForConmon, kind: 'oci' }, id, process: { ...spec.process, args: ['sleep', '60'] }, timeoutSeconds: 1 });
    const took = performance.now() - t2;
    assert.equal(slow.timedOut, true);
    assert.ok(took >= 1000 && took < 1000 + EXEC_START_ALLOWANCE_MS + 10_000, `a 1 s timeout took ${Math.round(took)} ms`);
    await stopContainer(runc, id, { exitDir, timeoutMs: 0 });
    await runc.delete(id);
  });

  it('execSync through the spawn helper: the same', async () => {
    assert.equal(runCommandsThroughSpawnServer(), true);
    try {
      await execSyncBehaves('exec-helper');
    } finally {
      stopSpawnServer();
    }
  });

  it('reports runc create failures with runc message and leaves no conmon behind', async () => {
    await assert.rejects(
      start('broken', { args: ['/no/such/binary'] }),
      (err: unknown) => err instanceof ConmonError && /no such file or directory|not found/.test(err.message),
    );
    const id = created[created.length - 1]!;
    // conmon writes its pid file before it runs runc, so a failed create still leaves one to check.
    const pidText = await fs.readFile(join(base, id, 'conmon.pid'), 'utf8');
    const conmonPid = Number(pidText.trim());
    assert.ok(Number.isInteger(conmonPid) && conmonPid > 1, `conmon.pid holds a pid: ${JSON.stringify(pidText)}`);
    await eventually('conmon exits with its container', async () => !isProcessAlive(conmonPid));
    await runc.delete(id, { force: true });
  });
});
