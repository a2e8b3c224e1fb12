import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { promises as fs } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { makeBusyboxRootfs, cgroupExistsAnywhere, isRoot, removeCgroupEverywhere, uniqueName } from '@skiff/test-support';
import { readHostFacts, type HostFacts } from './host-facts.js';
import { runCommand, type CommandResult } from '@skiff/common';
import { Runc, RuncError, errorsFromRuncLog } from './runc.js';
import { buildSpec, type ContainerSpecInput } from './spec-builder.js';
import { listHostDevices } from './devices.js';
import { capabilitiesFromMask, DEFAULT_CAPABILITIES } from './capabilities.js';
import type { Spec } from './runtime-spec.js';

describe('runc output parsing', () => {
  it('keeps the error lines of a JSON log', () => {
    const log = '{"level":"info","msg":"ok"}\n{"level":"error","msg":"exec: \\"nope\\": not found"}\n';
    assert.equal(errorsFromRuncLog(log), 'exec: "nope": not found');
  });
});

describe('Runc against the real runc', { skip: !isRoot && 'needs root' }, () => {
  const name = uniqueName('skr');
  const cgroupParent = `skiff-test-${name}`;
  let base: string;
  let rootfs: string;
  let runc: Runc;
  let facts: HostFacts;
  const created: string[] = [];

  before(async () => {
    base = await fs.mkdtemp(join(tmpdir(), 'skiff-runc-test-'));
    rootfs = join(base, 'rootfs');
    await makeBusyboxRootfs(rootfs);
    runc = new Runc({ root: join('/run', `skiff-test-${name}`, 'runc') });
    facts = await readHostFacts();
  });

  after(async () => {
    for (const id of created) await runc.delete(id, { force: true }).catch(() => undefined);
    await removeCgroupEverywhere(cgroupParent);
    await fs.rm(join('/run', `skiff-test-${name}`), { recursive: true, force: true });
    await fs.rm(base, { recursive: true, force: true });
  });

  async function createContainer(id: string, overrides: Partial<ContainerSpecInput> = {}): Promise<Spec> {
    const bundle = join(base, id);
    await fs.mkdir(bundle, { recursive: true });
    const spec = buildSpec(
      { rootfs, args: ['sleep', '3600'], hostname: id, cgroupsPath: `/${cgroupParent}/${id}`, ...overrides },
      facts,
    );
    await fs.writeFile(join(bundle, 'config.json'), JSON.stringify(spec));
    created.push(id);
    // `runc create` as conmon runs it: stdio on /dev/null, errors from runc's JSON log.
    const log = join(bundle, 'runc.log');
    const args = ['--log', log, '--log-format', 'json', 'create', '--bundle', bundle, '--pid-file', join(bundle, 'pid'), id];
    const result = await runCommand(runc.binary, [...runc.globalArgs, ...args], { timeoutMs: 30_000, discardOutput: true });
    if (result.code !== 0) throw new RuncError(args, result.code, errorsFromRuncLog(await fs.readFile(log, 'utf8').catch(() => '')));
    return spec;
  }

  async function sh(id: string, spec: Spec, script: string): Promise<CommandResult> {
    const processFile = join(base, `${id}-process.json`);
    await fs.writeFile(processFile, JSON.stringify({ ...spec.process, args: ['sh', '-c', script], terminal: false }), { mode: 0o600 });
    return runCommand(runc.binary, [...runc.globalArgs, 'exec', '--process', processFile, id], { timeoutMs: 20_000 });
  }

  it('creates, starts, inspects, updates, kills and deletes a container', async () => {
    const id = `${name}-life`;
    const spec = await createContainer(id, {
      readonlyRootfs: true,
      oomScoreAdj: 500,
      seccomp: { kind: 'runtime-default' },
      resources: { memoryLimitBytes: 64 << 20, cpuShares: 512, pidsLimit: 100, cpuQuota: 50_000, cpuPeriod: 100_000 },
    });
    const createdState = await runc.state(id);
    assert.equal(createdState.status, 'created');
    assert.ok(createdState.pid > 0);

    await runc.start(id);
    assert.equal((await runc.state(id)).status, 'running');
    assert.ok((await runc.list()).some((c) => c.id === id));

    const status = await sh(id, spec, 'hostname; cat /proc/1/oom_score_adj; grep -E "^(CapEff|Seccomp):" /proc/self/status');
    assert.equal(status.code, 0, status.stderr);
    const [hostname, oom, capEff, seccompMode] = status.stdout.trim().split('\n');
    assert.equal(hostname, id);
    assert.equal(oom, '500');
    assert.deepEqual(capabilitiesFromMask(capEff!.split(/\s+/)[1]!).sort(), [...DEFAULT_CAPABILITIES].sort());
    assert.match(seccompMode!, /Seccomp:\s+2/);

    const denied = await sh(id, spec, 'unshare -n true; echo "unshare=$?"; touch /written 2>&1; echo "touch=$?"; cat /proc/kcore | wc -c');
    assert.match(denied.stdout, /unshare=1/, 'RuntimeDefault seccomp blocks unshare without CAP_SYS_ADMIN');
    assert.match(denied.stdout, /touch=1/, 'the rootfs is read-only');
    assert.match(denied.stdout, /^0$/m, '/proc/kcore is masked');

    const cg = `/sys/fs/cgroup/memory/${cgroupParent}/${id}`;
    assert.equal((await fs.readFile(join(cg, 'memory.limit_in_bytes'), 'utf8')).trim(), String(64 << 20));
    assert.equal((await fs.readFile(`/sys/fs/cgroup/cpu/${cgroupParent}/${id}/cpu.shares`, 'utf8')).trim(), '512');
    assert.equal((await fs.readFile(`/sys/fs/cgroup/cpu/${cgroupParent}/${id}/cpu.cfs_quota_us`, 'utf8')).trim(), '50000');
    assert.equal((await fs.readFile(`/sys/fs/cgroup/pids/${cgroupParent}/${id}/pids.max`, 'utf8')).trim(), '100');

    await runc.update(id, { memory: { limit: 32 << 20 }, pids: { limit: 50 } });
    assert.equal((await fs.readFile(join(cg, 'memory.limit_in_bytes'), 'utf8')).trim(), String(32 << 20));
    assert.equal((await fs.readFile(`/sys/fs/cgroup/pids/${cgroupParent}/${id}/pids.max`, 'utf8')).trim(), '50');

    await runc.kill(id, 'SIGKILL');
    for (let i = 0; i < 100 && (await runc.state(id)).status !== 'stopped'; i++) await new Promise((r) => setTimeout(r, 50));
    assert.equal((await runc.state(id)).status, 'stopped');
    await assert.rejects(runc.kill(id, 'SIGTERM'), (err: unknown) => err instanceof RuncError && err.notRunning);
    await runc.delete(id);
    assert.equal(await runc.stateIfExists(id), undefined);
    assert.equal(await cgroupExistsAnywhere(`${cgroupParent}/${id}`), false);
    await runc.delete(id); // deleting twice is fine
  });

  it('reports runc errors with runc own message', async () => {
    await assert.rejects(runc.state(`${name}-missing`), (err: unknown) => err instanceof RuncError && err.notFound && /does not exist/.test(err.message));
    const id = `${name}-bad`;
    await assert.rejects(createContainer(id, { args: ['/no/such/binary'] }), (err: unknown) => {
      assert.ok(err instanceof RuncError);
      assert.match(err.message, /no such file or directory|not found/);
      return true;
    });
    await runc.delete(id, { force: true });
  });

  it('runs a privileged container with every host device and capability', async () => {
    const id = `${name}-priv`;
    const spec = await createContainer(id, { privileged: true, hostDevices: await listHostDevices() });
    await runc.start(id);
    const out = await sh(id, spec, 'grep CapEff /proc/self/status; ls /dev/null /dev/loop0 /dev/kvm 2>&1; mount | grep " /sys "');
    assert.equal(out.code, 0, out.stdout + out.stderr);
    assert.deepEqual(capabilitiesFromMask(out.stdout.split('\n')[0]!.split(/\s+/)[1]!), facts.boundingCapabilities);
    assert.match(out.stdout, /\/dev\/loop0/);
    assert.match(out.stdout, /sysfs on \/sys type sysfs \(rw/);
    await runc.delete(id, { force: true });
  });

  it('applies a Localhost seccomp profile', async () => {
    const id = `${name}-seccomp`;
    const spec = await createContainer(id, {
      seccomp: { kind: 'localhost', profile: { defaultAction: 'SCMP_ACT_ALLOW', syscalls: [{ names: ['mkdir', 'mkdirat'], action: 'SCMP_ACT_ERRNO', errnoRet: 1 }] } },
    });
    await runc.start(id);
    const out = await sh(id, spec, 'mkdir /tmp/x 2>&1; echo "mkdir=$?"');
    assert.match(out.stdout, /Operation not permitted/);
    assert.match(out.stdout, /mkdir=1/);
    await runc.delete(id, { force: true });
  });
});
