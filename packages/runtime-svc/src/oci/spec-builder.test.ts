import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { promises as fs } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { buildSpec, DEFAULT_MASKED_PATHS, DEFAULT_READONLY_PATHS, SpecError, type ContainerSpecInput } from './spec-builder.js';
import { CAPABILITY_BITS, CapabilityError, DEFAULT_CAPABILITIES, capabilitiesFromMask, resolveCapabilities } from './capabilities.js';
import { parseBoundingCapabilities, parseCgroupV1Controllers, parseHardRlimits, type HostFacts } from './host-facts.js';
import { runtimeDefaultSeccompProfile } from './seccomp-default.js';
import { loadSeccompProfile, SeccompProfileError } from './seccomp-localhost.js';
import type { ResolvedDevice } from './devices.js';

const ALL_BUT_SYS_RESOURCE = CAPABILITY_BITS.filter((c) => c !== 'CAP_SYS_RESOURCE');

function facts(overrides: Partial<HostFacts> = {}): HostFacts {
  return {
    oomScoreAdj: 0,
    boundingCapabilities: ALL_BUT_SYS_RESOURCE,
    apparmorEnabled: false,
    apparmorDefaultProfileLoaded: false,
    cgroupV1Controllers: ['blkio', 'cpu', 'cpuacct', 'cpuset', 'devices', 'freezer', 'memory', 'pids'],
    cgroupVersion: 1,
    ...overrides,
  };
}

function input(overrides: Partial<ContainerSpecInput> = {}): ContainerSpecInput {
  return { rootfs: '/bundle/rootfs', args: ['sh'], ...overrides };
}

describe('capabilities', () => {
  it('decodes a bounding-set mask and skips missing bits', () => {
    const caps = capabilitiesFromMask('000001fffeffffff');
    assert.equal(caps.includes('CAP_SYS_RESOURCE'), false);
    assert.equal(caps.includes('CAP_CHECKPOINT_RESTORE'), true);
    assert.equal(caps.length, CAPABILITY_BITS.length - 1);
  });

  it('applies add/drop including ALL, and never exceeds what the host can grant', () => {
    assert.deepEqual(resolveCapabilities([], [], ALL_BUT_SYS_RESOURCE).sort(), [...DEFAULT_CAPABILITIES].sort());
    assert.deepEqual(resolveCapabilities(['NET_ADMIN'], ['ALL'], ALL_BUT_SYS_RESOURCE), ['CAP_NET_ADMIN']);
    const all = resolveCapabilities(['ALL'], ['cap_sys_admin'], ALL_BUT_SYS_RESOURCE);
    assert.equal(all.includes('CAP_SYS_ADMIN'), false);
    assert.equal(all.includes('CAP_SYS_RESOURCE'), false);
    assert.equal(all.length, CAPABILITY_BITS.length - 2);
    assert.equal(resolveCapabilities([], ['KILL', 'chown'], ALL_BUT_SYS_RESOURCE).includes('CAP_KILL'), false);
    assert.throws(() => resolveCapabilities(['NOT_A_CAP'], [], ALL_BUT_SYS_RESOURCE), CapabilityError);
  });
});

describe('host facts parsing', () => {
  it('reads CapBnd and the mounted v1 controllers', () => {
    assert.deepEqual(parseBoundingCapabilities('Name:\tx\nCapBnd:\t0000000000000003\n'), ['CAP_CHOWN', 'CAP_DAC_OVERRIDE']);
    const cg = '12:pids:/\n11:cpu,cpuacct:/x\n1:name=systemd:/\n0::/\n';
    assert.deepEqual(parseCgroupV1Controllers(cg), ['cpu', 'cpuacct', 'pids']);
    const limits = parseHardRlimits(
      'Limit                     Soft Limit           Hard Limit           Units     \n' +
        'Max cpu time              unlimited            unlimited            seconds   \n' +
        'Max open files            20000                20000                files     \n' +
        'Max nice priority         0                    0                    \n',
    );
    assert.deepEqual(limits, { RLIMIT_CPU: Infinity, RLIMIT_NOFILE: 20000, RLIMIT_NICE: 0 });
  });
});

describe('buildSpec', () => {
  it('produces a runnable default container', () => {
    const spec = buildSpec(input({ hostname: 'web', cgroupsPath: '/skiff/pod/ctr' }), facts());
    assert.equal(spec.ociVersion, '1.0.2');
    assert.equal(spec.root.path, '/bundle/rootfs');
    assert.equal(spec.root.readonly, false);
    assert.equal(spec.hostname, 'web');
    assert.equal(spec.process.cwd, '/');
    assert.deepEqual(spec.process.user, { uid: 0, gid: 0 });
    assert.ok(spec.process.env.some((e) => e.startsWith('PATH=')));
    assert.equal(spec.process.noNewPrivileges, false);
    assert.deepEqual(spec.process.capabilities?.bounding.sort(), [...DEFAULT_CAPABILITIES].sort());
    assert.deepEqual(spec.linux.namespaces.map((n) => n.type).sort(), ['ipc', 'mount', 'network', 'pid', 'uts']);
    assert.equal(spec.linux.cgroupsPath, '/skiff/pod/ctr');
    assert.deepEqual(spec.linux.maskedPaths, [...DEFAULT_MASKED_PATHS]);
    assert.deepEqual(spec.linux.readonlyPaths, [...DEFAULT_READONLY_PATHS]);
    assert.deepEqual(spec.linux.resources?.devices, [{ allow: false, access: 'rwm' }]);
    assert.equal(spec.linux.seccomp, undefined, 'no profile asked for means unconfined, as CRI defines it');
    assert.equal(spec.process.apparmorProfile, undefined);
    const destinations = spec.mounts.map((m) => m.destination);
    for (const d of ['/proc', '/dev', '/dev/pts', '/dev/mqueue', '/dev/shm', '/sys', '/sys/fs/cgroup']) assert.ok(destinations.includes(d), d);
    assert.ok(spec.mounts.find((m) => m.destination === '/sys')?.options?.includes('ro'));
    assert.ok(spec.mounts.find((m) => m.destination === '/sys/fs/cgroup')?.options?.includes('ro'));
  });

  it('sets process fields: args, env, cwd, user, tty, rlimits, no_new_privs', () => {
    const spec = buildSpec(
      input({
        args: ['/app', '--flag'],
        env: ['PATH=/custom', 'A=1'],
        cwd: '/work',
        user: { uid: 1000, gid: 2000, additionalGids: [20, 10], umask: 0o022 },
        terminal: true,
        rlimits: [{ type: 'RLIMIT_NOFILE', hard: 4096, soft: 1024 }],
        noNewPrivileges: true,
      }),
      facts(),
    );
    assert.deepEqual(spec.process.args, ['/app', '--flag']);
    assert.deepEqual(spec.process.env, ['PATH=/custom', 'A=1', 'TERM=xterm']);
    assert.equal(spec.process.cwd, '/work');
    assert.deepEqual(spec.process.user, { uid: 1000, gid: 2000, additionalGids: [10, 20], umask: 0o022 });
    assert.equal(spec.process.terminal, true);
    assert.deepEqual(spec.process.rlimits, [{ type: 'RLIMIT_NOFILE', hard: 4096, soft: 1024 }]);
    assert.equal(spec.process.noNewPrivileges, true);
  });

  it('refuses rlimits above the daemon hard limit when nothing may raise them', () => {
    const limited = facts({ hardRlimits: { RLIMIT_NOFILE: 20000 } });
    const ok = buildSpec(input({ rlimits: [{ type: 'RLIMIT_NOFILE', hard: 20000, soft: 1024 }] }), limited);
    assert.deepEqual(ok.process.rlimits, [{ type: 'RLIMIT_NOFILE', hard: 20000, soft: 1024 }]);
    assert.throws(() => buildSpec(input({ rlimits: [{ type: 'RLIMIT_NOFILE', hard: 65536, soft: 65536 }] }), limited), /CAP_SYS_RESOURCE/);
    assert.throws(() => buildSpec(input({ rlimits: [{ type: 'RLIMIT_NOFILE', hard: 10, soft: 20 }] }), limited), /soft limit/);
    const capable = facts({ boundingCapabilities: [...CAPABILITY_BITS], hardRlimits: { RLIMIT_NOFILE: 20000 } });
    assert.ok(buildSpec(input({ rlimits: [{ type: 'RLIMIT_NOFILE', hard: 65536, soft: 65536 }] }), capable));
  });

  it('rejects a container without a command', () => {
    assert.throws(() => buildSpec(input({ args: [] }), facts()), SpecError);
  });

  it('joins a sandbox namespaces by path, omits host ones and drops the hostname when UTS is shared', () => {
    const spec = buildSpec(
      input({
        hostname: 'ignored',
        namespaces: {
          network: { mode: 'join', path: '/run/skiff/netns/pod1' },
          ipc: { mode: 'join', path: '/proc/42/ns/ipc' },
          uts: { mode: 'join', path: '/proc/42/ns/uts' },
          pid: { mode: 'host' },
        },
      }),
      facts(),
    );
    assert.deepEqual(spec.linux.namespaces, [
      { type: 'mount' },
      { type: 'network', path: '/run/skiff/netns/pod1' },
      { type: 'ipc', path: '/proc/42/ns/ipc' },
      { type: 'uts', path: '/proc/42/ns/uts' },
    ]);
    assert.equal(spec.hostname, undefined);
    assert.throws(() => buildSpec(input({ namespaces: { network: { mode: 'join', path: 'relative' } } }), facts()), SpecError);
  });

  it('lists id mappings for a new user namespace only: one joined by path is mapped already', () => {
    const idMappings = { uid: { containerID: 0, hostID: 1 << 20, size: 65536 }, gid: { containerID: 0, hostID: 1 << 20, size: 65536 } };
    const joined = buildSpec(input({ idMappings, namespaces: { user: { mode: 'join', path: '/run/skiff/pods/p/userns' } } }), facts());
    assert.deepEqual(joined.linux.namespaces[1], { type: 'user', path: '/run/skiff/pods/p/userns' });
    assert.equal(joined.linux.uidMappings, undefined);
    assert.equal(joined.linux.gidMappings, undefined);
    const made = buildSpec(input({ idMappings, namespaces: { user: { mode: 'new' } } }), facts());
    assert.deepEqual([made.linux.uidMappings, made.linux.gidMappings], [[idMappings.uid], [idMappings.gid]]);
    assert.throws(() => buildSpec(input({ namespaces: { user: { mode: 'new' } } }), facts()), SpecError);
  });

  it('builds bind mounts with ro and propagation, ordered parents first, replacing defaults', () => {
    const spec = buildSpec(
      input({
        mounts: [
          { containerPath: '/data/sub', hostPath: '/host/sub', propagation: 'rslave' },
          { containerPath: '/data', hostPath: '/host/data', readonly: true },
          { containerPath: '/dev/shm', hostPath: '/run/skiff/pods/p/shm' },
        ],
      }),
      facts(),
    );
    const binds = spec.mounts.filter((m) => m.type === 'bind');
    assert.deepEqual(binds, [
      { destination: '/data', type: 'bind', source: '/host/data', options: ['rbind', 'rprivate', 'ro'] },
      { destination: '/data/sub', type: 'bind', source: '/host/sub', options: ['rbind', 'rslave', 'rw'] },
      { destination: '/dev/shm', type: 'bind', source: '/run/skiff/pods/p/shm', options: ['rbind', 'rprivate', 'rw'] },
    ]);
    assert.equal(spec.mounts.filter((m) => m.destination === '/dev/shm').length, 1, 'the default /dev/shm is replaced');
    assert.equal(spec.linux.rootfsPropagation, 'rslave');
    const shared = buildSpec(input({ mounts: [{ containerPath: '/m', hostPath: '/m', propagation: 'rshared' }] }), facts());
    assert.equal(shared.linux.rootfsPropagation, 'rshared');
    assert.throws(() => buildSpec(input({ mounts: [{ containerPath: 'rel', hostPath: '/x' }] }), facts()), SpecError);
  });

  it("makes a recursive read-only bind with runc's rro, in the container's mount namespace", () => {
    const spec = buildSpec(input({ mounts: [{ containerPath: '/data', hostPath: '/host/data', readonly: true, recursiveReadonly: true, options: ['noexec'] }] }), facts());
    assert.deepEqual(spec.mounts.find((m) => m.destination === '/data'), { destination: '/data', type: 'bind', source: '/host/data', options: ['rbind', 'rprivate', 'ro', 'rro', 'noexec'] });
  });

  it('maps resources to linux.resources', () => {
    const spec = buildSpec(
      input({
        resources: {
          cpuShares: 512,
          cpuQuota: 50_000,
          cpuPeriod: 100_000,
          cpusetCpus: '0',
          cpusetMems: '0',
          memoryLimitBytes: 64 << 20,
          memorySwapLimitBytes: 128 << 20,
          pidsLimit: 100,
          hugepageLimits: [{ pageSize: '2MB', limitBytes: 4 << 20 }],
        },
      }),
      facts({ cgroupV1Controllers: ['cpu', 'hugetlb', 'memory', 'pids'] }),
    );
    assert.deepEqual(spec.linux.resources?.cpu, { shares: 512, quota: 50_000, period: 100_000, cpus: '0', mems: '0' });
    assert.deepEqual(spec.linux.resources?.memory, { limit: 64 << 20, swap: 128 << 20 });
    assert.deepEqual(spec.linux.resources?.pids, { limit: 100 });
    assert.deepEqual(spec.linux.resources?.hugepageLimits, [{ pageSize: '2MB', limit: 4 << 20 }]);
  });

  it('leaves hugepage limits out where no hugetlb controller is mounted, and refuses bad memory limits', () => {
    const spec = buildSpec(input({ resources: { hugepageLimits: [{ pageSize: '2MB', limitBytes: 1 << 21 }] } }), facts());
    assert.equal(spec.linux.resources?.hugepageLimits, undefined);
    assert.throws(() => buildSpec(input({ resources: { memoryLimitBytes: 100, memorySwapLimitBytes: 50 } }), facts()), SpecError);
    assert.throws(() => buildSpec(input({ resources: { unified: { 'memory.high': '1' } } }), facts()), SpecError);
  });

  it('raises oom_score_adj to the daemon own value, and keeps it in range', () => {
    assert.equal(buildSpec(input({ oomScoreAdj: -998 }), facts({ oomScoreAdj: 0 })).process.oomScoreAdj, 0);
    assert.equal(buildSpec(input({ oomScoreAdj: 1000 }), facts({ oomScoreAdj: 0 })).process.oomScoreAdj, 1000);
    assert.equal(buildSpec(input({ oomScoreAdj: 5000 }), facts()).process.oomScoreAdj, 1000);
    assert.equal(buildSpec(input({ oomScoreAdj: -1000 }), facts({ oomScoreAdj: -1000 })).process.oomScoreAdj, -1000);
    assert.equal(buildSpec(input(), facts()).process.oomScoreAdj, undefined);
  });

  it('applies capability add/drop', () => {
    const spec = buildSpec(input({ capabilities: { add: ['NET_ADMIN'], drop: ['ALL'] } }), facts());
    assert.deepEqual(spec.process.capabilities, { bounding: ['CAP_NET_ADMIN'], effective: ['CAP_NET_ADMIN'], permitted: ['CAP_NET_ADMIN'] });
  });

  it('privileged: all grantable caps, no masks, rw /sys, every device, no seccomp or AppArmor', () => {
    const hostDevices: ResolvedDevice[] = [
      { device: { type: 'c', path: '/dev/kvm', major: 10, minor: 232, fileMode: 0o600, uid: 0, gid: 0 }, access: 'rwm' },
    ];
    const spec = buildSpec(
      input({ privileged: true, hostDevices, seccomp: { kind: 'runtime-default' }, apparmor: { kind: 'runtime-default' } }),
      facts({ apparmorEnabled: true, apparmorDefaultProfileLoaded: true }),
    );
    assert.deepEqual(spec.process.capabilities?.bounding, ALL_BUT_SYS_RESOURCE);
    assert.equal(spec.linux.maskedPaths, undefined);
    assert.equal(spec.linux.readonlyPaths, undefined);
    assert.deepEqual(spec.linux.resources?.devices, [{ allow: true, access: 'rwm' }]);
    assert.deepEqual(spec.linux.devices?.map((d) => d.path), ['/dev/kvm']);
    assert.ok(spec.mounts.find((m) => m.destination === '/sys')?.options?.includes('rw'));
    assert.equal(spec.linux.seccomp, undefined);
    assert.equal(spec.process.apparmorProfile, undefined);
  });

  it('adds requested devices with cgroup rules', () => {
    const dev: ResolvedDevice = { device: { type: 'c', path: '/dev/fuse', major: 10, minor: 229, fileMode: 0o666, uid: 0, gid: 0 }, access: 'rw' };
    const spec = buildSpec(input({ devices: [dev] }), facts());
    assert.deepEqual(spec.linux.devices, [dev.device]);
    assert.deepEqual(spec.linux.resources?.devices, [
      { allow: false, access: 'rwm' },
      { allow: true, type: 'c', major: 10, minor: 229, access: 'rw' },
    ]);
  });

  it('honours readonly rootfs and custom masked/readonly paths', () => {
    const spec = buildSpec(input({ readonlyRootfs: true, maskedPaths: [], readonlyPaths: ['/proc/sys'] }), facts());
    assert.equal(spec.root.readonly, true);
    assert.deepEqual(spec.linux.maskedPaths, []);
    assert.deepEqual(spec.linux.readonlyPaths, ['/proc/sys']);
  });

  it('accepts namespaced sysctls only, and only with their own namespace', () => {
    const spec = buildSpec(input({ sysctls: { 'net.ipv4.ip_forward': '1', 'kernel.shmmax': '1000', 'fs.mqueue.msg_max': '20' } }), facts());
    assert.deepEqual(spec.linux.sysctl, { 'net.ipv4.ip_forward': '1', 'kernel.shmmax': '1000', 'fs.mqueue.msg_max': '20' });
    assert.throws(() => buildSpec(input({ sysctls: { 'vm.swappiness': '1' } }), facts()), /not namespaced/);
    assert.throws(
      () => buildSpec(input({ sysctls: { 'net.core.somaxconn': '1' }, namespaces: { network: { mode: 'host' } } }), facts()),
      /host network namespace/,
    );
    assert.throws(() => buildSpec(input({ sysctls: { 'kernel.sem': '1 2 3 4' }, namespaces: { ipc: { mode: 'host' } } }), facts()), /host IPC/);
  });

  it('uses our RuntimeDefault seccomp profile, shaped by the capabilities', () => {
    const spec = buildSpec(input({ seccomp: { kind: 'runtime-default' } }), facts());
    const seccomp = spec.linux.seccomp;
    assert.ok(seccomp);
    assert.equal(seccomp.defaultAction, 'SCMP_ACT_ERRNO');
    const allowed = new Set(seccomp.syscalls?.filter((s) => s.action === 'SCMP_ACT_ALLOW' && !s.args).flatMap((s) => s.names));
    for (const name of ['read', 'write', 'execve', 'mmap', 'socket', 'exit_group', 'wait4']) assert.ok(allowed.has(name), name);
    assert.equal(allowed.has('mount'), false);
    assert.equal(allowed.has('reboot'), false);
    assert.ok(seccomp.syscalls?.some((s) => s.names.includes('clone') && s.args?.[0]?.op === 'SCMP_CMP_MASKED_EQ'));
    const admin = runtimeDefaultSeccompProfile(['CAP_SYS_ADMIN']);
    assert.ok(admin.syscalls?.[0]?.names.includes('mount'));
    assert.ok(admin.syscalls?.[0]?.names.includes('clone'));
  });

  it('passes a Localhost seccomp profile through and Unconfined leaves none', async () => {
    const profile = { defaultAction: 'SCMP_ACT_ALLOW' as const, syscalls: [{ names: ['mkdir'], action: 'SCMP_ACT_ERRNO' as const }] };
    assert.deepEqual(buildSpec(input({ seccomp: { kind: 'localhost', profile } }), facts()).linux.seccomp, profile);
    assert.equal(buildSpec(input({ seccomp: { kind: 'unconfined' } }), facts()).linux.seccomp, undefined);
  });

  it('loads Localhost profiles from disk, including Docker-style archMap', async () => {
    const dir = await fs.mkdtemp(join(tmpdir(), 'skiff-seccomp-'));
    try {
      const file = join(dir, 'p.json');
      await fs.writeFile(
        file,
        JSON.stringify({
          defaultAction: 'SCMP_ACT_ERRNO',
          archMap: [{ architecture: 'SCMP_ARCH_X86_64', subArchitectures: ['SCMP_ARCH_X86'] }],
          syscalls: [{ names: ['read'], action: 'SCMP_ACT_ALLOW' }],
        }),
      );
      const p = await loadSeccompProfile(file);
      assert.deepEqual(p.architectures, ['SCMP_ARCH_X86_64', 'SCMP_ARCH_X86']);
      await fs.writeFile(file, '{"syscalls": []}');
      await assert.rejects(loadSeccompProfile(file), SeccompProfileError);
      await assert.rejects(loadSeccompProfile(join(dir, 'missing.json')), /cannot read seccomp profile/);
    } finally {
      await fs.rm(dir, { recursive: true, force: true });
    }
  });

  it('AppArmor: named profile only when the kernel has AppArmor', () => {
    assert.equal(buildSpec(input({ apparmor: { kind: 'runtime-default' } }), facts()).process.apparmorProfile, undefined);
    assert.throws(() => buildSpec(input({ apparmor: { kind: 'localhost', name: 'p' } }), facts()), /AppArmor is not enabled/);
    const on = facts({ apparmorEnabled: true, apparmorDefaultProfileLoaded: true });
    assert.equal(buildSpec(input({ apparmor: { kind: 'localhost', name: 'p' } }), on).process.apparmorProfile, 'p');
    assert.equal(buildSpec(input({ apparmor: { kind: 'runtime-default' } }), on).process.apparmorProfile, 'skiff-default');
    assert.equal(buildSpec(input({ apparmor: { kind: 'unconfined' } }), on).process.apparmorProfile, undefined);
  });
});
