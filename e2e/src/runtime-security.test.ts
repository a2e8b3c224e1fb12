import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { mkdir } from 'node:fs/promises';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { status } from '@grpc/grpc-js';
import { callUnary, type cri } from '@skiff/proto';
import { rejectsWithCode } from './lib/grpc-assert.js';
import { TEST_USER } from './lib/image-catalogue.js';
import { gvisorCannot, startRuntimeHarness, UNDER_GVISOR, type Pod, type RuntimeHarness } from './lib/runtime-harness.js';

const run = promisify(execFile);
let h: RuntimeHarness;
let pod: Pod;
let counter = 0;

before(async () => {
  h = await startRuntimeHarness({ images: ['busybox', 'withusername'] });
  pod = await h.runPod();
});

after(async () => {
  await h?.stop();
});

/** Bit numbers of include/uapi/linux/capability.h, for the capabilities these tests name. */
const CAP_BIT: Record<string, number> = {
  CHOWN: 0,
  DAC_OVERRIDE: 1,
  FOWNER: 3,
  FSETID: 4,
  KILL: 5,
  SETGID: 6,
  SETUID: 7,
  SETPCAP: 8,
  NET_BIND_SERVICE: 10,
  NET_ADMIN: 12,
  NET_RAW: 13,
  SYS_CHROOT: 18,
  SYS_ADMIN: 21,
  MKNOD: 27,
  AUDIT_WRITE: 29,
  SETFCAP: 31,
};

/** What an unprivileged container gets by default (containerd's and Docker's set). */
const DEFAULT_CAPS = ['CHOWN', 'DAC_OVERRIDE', 'FSETID', 'FOWNER', 'MKNOD', 'NET_RAW', 'SETGID', 'SETUID', 'SETFCAP', 'SETPCAP', 'NET_BIND_SERVICE', 'SYS_CHROOT', 'KILL', 'AUDIT_WRITE'];

function mask(names: readonly string[]): bigint {
  return names.reduce((m, name) => m | (1n << BigInt(CAP_BIT[name]!)), 0n);
}

/** runsc runs without --net-raw and so drops CAP_NET_RAW from every set (runtime-svc's README, "raw sockets"). */
const NOT_UNDER_HANDLER = UNDER_GVISOR ? mask(['NET_RAW']) : 0n;

function statusField(statusText: string, field: string): string {
  const value = new RegExp(`^${field}:\\s*(\\S+)$`, 'm').exec(statusText)?.[1];
  if (value === undefined) throw new Error(`no ${field} in /proc/self/status`);
  return value;
}

/** Runs `sleep` with the given security context in `target` and returns its id. */
async function secured(security: cri.LinuxContainerSecurityContext, overrides: Partial<cri.ContainerConfig> = {}, target: Pod = pod): Promise<string> {
  counter++;
  return h.runContainer(target, `sec-${counter}`, { linux: { security_context: security }, ...overrides });
}

async function sh(id: string, script: string): Promise<{ code: number; stdout: string; stderr: string }> {
  return h.exec(id, ['sh', '-c', script]);
}

async function procStatus(id: string): Promise<string> {
  return (await h.exec(id, ['cat', '/proc/self/status'])).stdout;
}

describe('security context, checked from inside the container', () => {
  test('run_as_user, run_as_group and supplemental groups', async () => {
    const id = await secured({ run_as_user: { value: 1000 }, run_as_group: { value: 2000 }, supplemental_groups: [3000, 4000] });
    assert.equal((await sh(id, 'echo "$(id -u) $(id -g) $(id -G)"')).stdout, '1000 2000 2000 3000 4000\n');
    assert.deepEqual((await h.containerStatus(id)).user?.linux, { uid: '1000', gid: '2000', supplemental_groups: ['2000', '3000', '4000'] });
  });

  test('run_as_group without run_as_user or run_as_username is refused', async () => {
    await rejectsWithCode(
      h.createContainer(pod, `group-only-${++counter}`, { linux: { security_context: { run_as_group: { value: 2000 } } } }),
      status.INVALID_ARGUMENT,
      /run_as_group is set without run_as_user or run_as_username/,
    );
  });

  test('a user name from the image resolves to its uid and gid', async () => {
    const id = await h.runContainer(pod, 'image-user', { image: { image: h.imageRef('withusername') } });
    assert.equal((await sh(id, 'echo "$(id -u) $(id -g) $(id -un)"')).stdout, `${TEST_USER.uid} ${TEST_USER.gid} ${TEST_USER.name}\n`);
    assert.equal((await h.containerStatus(id)).user?.linux?.uid, String(TEST_USER.uid));
  });

  test('readonly_rootfs: writing to the root filesystem fails, the pod files stay usable', async () => {
    const id = await secured({ readonly_rootfs: true });
    const write = await sh(id, 'touch /written 2>&1; echo "exit $?"');
    assert.match(write.stdout, /Read-only file system\nexit 1\n$/);
    assert.equal((await sh(id, 'echo ok > /dev/shm/f && cat /dev/shm/f')).stdout, 'ok\n', '/dev/shm is still writable');
    const writable = await secured({});
    assert.equal((await sh(writable, 'touch /written; echo "exit $?"')).stdout, 'exit 0\n');
  });

  test('capabilities: the default set, add and drop, drop ALL', async () => {
    const defaults = await secured({});
    const added = await secured({ capabilities: { add_capabilities: ['NET_ADMIN', 'SYS_ADMIN'], drop_capabilities: ['CHOWN', 'KILL'] } });
    const none = await secured({ capabilities: { drop_capabilities: ['ALL'] } });
    const only = await secured({ capabilities: { drop_capabilities: ['ALL'], add_capabilities: ['NET_BIND_SERVICE'] } });
    const capEff = async (id: string): Promise<bigint> => BigInt(`0x${statusField(await procStatus(id), 'CapEff')}`);

    assert.equal(await capEff(defaults), mask(DEFAULT_CAPS) & ~NOT_UNDER_HANDLER);
    const expectedAdded = (mask(DEFAULT_CAPS) | mask(['NET_ADMIN', 'SYS_ADMIN'])) & ~mask(['CHOWN', 'KILL']) & ~NOT_UNDER_HANDLER;
    assert.equal(await capEff(added), expectedAdded);
    assert.equal(await capEff(none), 0n);
    assert.equal(BigInt(`0x${statusField(await procStatus(none), 'CapBnd')}`), 0n);
    assert.equal(await capEff(only), mask(['NET_BIND_SERVICE']));
    // And the kernel enforces them: without CAP_CHOWN, chown fails.
    assert.notEqual((await sh(added, 'touch /tmp/f && chown 1:1 /tmp/f')).code, 0);
    assert.equal((await sh(defaults, 'touch /tmp/f && chown 1:1 /tmp/f')).code, 0);
    const addAddress = 'ip addr add 192.0.2.200/32 dev lo 2>&1; echo "exit $?"';
    if (UNDER_GVISOR) {
      // gVisor passes the host's network stack through (--network=host) but not its configuration:
      // no address can be added even with NET_ADMIN (runtime-svc's README, "network devices").
      assert.match((await sh(added, addAddress)).stdout, /RTNETLINK answers: Invalid argument\nexit \d+\n$/);
      assert.match((await sh(defaults, addAddress)).stdout, /RTNETLINK answers: Permission denied\nexit \d+\n$/);
    } else {
      assert.equal((await sh(added, addAddress)).stdout, 'exit 0\n', 'NET_ADMIN works in the pod network namespace');
      assert.match((await sh(defaults, addAddress)).stdout, /Operation not permitted\nexit \d+\n$/);
    }
  });

  test('no_new_privs', gvisorCannot("its /proc/self/status has no NoNewPrivs line, and its kernel never raises privileges on exec, as if no_new_privs were always set"), async () => {
    const on = await secured({ no_new_privs: true });
    const off = await secured({ no_new_privs: false });
    assert.equal(statusField(await procStatus(on), 'NoNewPrivs'), '1');
    assert.equal(statusField(await procStatus(off), 'NoNewPrivs'), '0');
  });

  test('masked and read-only paths: the defaults, and lists that replace them', async () => {
    if (UNDER_GVISOR) {
      // runsc ignores maskedPaths and readonlyPaths: outside /proc and /sys they are refused.
      await rejectsWithCode(secured({ masked_paths: ['/bin/ls'] }), status.INVALID_ARGUMENT, /gVisor cannot mask paths \(masked_paths \/bin\/ls\)/);
      await rejectsWithCode(secured({ masked_paths: ['/proc/cpuinfo'], readonly_paths: ['/tmp'] }), status.INVALID_ARGUMENT, /gVisor cannot make paths read-only \(readonly_paths \/tmp\)/);
      return;
    }
    // /proc/kcore is masked too, where the kernel has one.
    const masked = ['/proc/kcore', '/proc/timer_list'].filter((p) => existsSync(p));
    assert.ok(masked.includes('/proc/timer_list'));
    const defaults = await secured({});
    for (const path of masked) {
      assert.equal((await sh(defaults, `cat ${path} | wc -c`)).stdout.trim(), '0', `${path} reads as empty`);
      assert.equal((await sh(defaults, `grep -c " ${path} " /proc/self/mountinfo`)).stdout.trim(), '1', `${path} is masked by a mount`);
    }
    assert.match((await sh(defaults, '(echo 1 > /proc/sys/net/ipv4/ip_forward) 2>&1; true')).stdout, /Read-only file system/);
    assert.equal((await sh(defaults, 'grep -c " /proc/sys " /proc/self/mountinfo')).stdout.trim(), '1');

    const custom = await secured({ masked_paths: ['/proc/cpuinfo'], readonly_paths: ['/tmp'] });
    assert.equal((await sh(custom, 'cat /proc/cpuinfo | wc -c')).stdout.trim(), '0');
    assert.match((await sh(custom, 'touch /tmp/x 2>&1; true')).stdout, /Read-only file system/);
    assert.notEqual((await sh(custom, 'cat /proc/timer_list | wc -c')).stdout.trim(), '0', 'the given list replaces the defaults');
    assert.equal((await sh(custom, 'grep -c " /proc/sys " /proc/self/mountinfo')).stdout.trim(), '0', '/proc/sys is no longer read-only');
  });

  test('seccomp: RuntimeDefault refuses new namespaces without CAP_SYS_ADMIN, Unconfined allows them', gvisorCannot("this runsc installs no seccomp filter on a process runsc exec starts, and these checks run through ExecSync; the container's own processes are filtered (runtime-gvisor.test.ts)"), async () => {
    const confined = await secured({ seccomp: { profile_type: 'RuntimeDefault' } });
    const unconfined = await secured({ seccomp: { profile_type: 'Unconfined' } });
    assert.equal(statusField(await procStatus(confined), 'Seccomp'), '2');
    assert.equal(statusField(await procStatus(unconfined), 'Seccomp'), '0');
    const refused = await sh(confined, 'unshare -U true 2>&1; echo "exit $?"');
    assert.match(refused.stdout, /Operation not permitted\nexit 1\n$/);
    assert.equal((await sh(unconfined, 'unshare -U true; echo "exit $?"')).stdout, 'exit 0\n');
  });

  test('privileged: every host capability, no masking, no seccomp, host devices', async () => {
    const privilegedPod = await h.runPod({ linux: { security_context: { privileged: true } } });
    try {
      const id = await secured({ privileged: true }, {}, privilegedPod);
      const status = await procStatus(id);
      const hostBounding = statusField(readFileSync('/proc/self/status', 'utf8'), 'CapBnd');
      assert.equal(BigInt(`0x${statusField(status, 'CapEff')}`), BigInt(`0x${hostBounding}`) & ~NOT_UNDER_HANDLER);
      assert.equal(statusField(status, 'Seccomp'), '0');
      assert.equal((await sh(id, 'grep -c " /proc/timer_list " /proc/self/mountinfo')).stdout.trim(), '0');
      assert.equal((await sh(id, 'mkdir -p /mnt/t && mount -t tmpfs none /mnt/t && echo mounted')).stdout, 'mounted\n');
      assert.equal((await sh(id, 'test -c /dev/kmsg && echo present')).stdout, 'present\n');
      assert.equal((await sh(await secured({}, {}, privilegedPod), 'test -e /dev/kmsg || echo absent')).stdout, 'absent\n', 'not for the unprivileged');
    } finally {
      await callUnary(h.runtime, 'RemovePodSandbox', { pod_sandbox_id: privilegedPod.id }, { timeoutMs: 60_000 });
    }
  });
});

describe('recursive read-only mounts', () => {
  let source: string;

  before(async () => {
    // A host directory with a submount: a plain read-only bind leaves the submount writable.
    source = join(h.skiff.dir, 'rro-source');
    await mkdir(join(source, 'sub'), { recursive: true });
    await run('mount', ['-t', 'tmpfs', '-o', 'size=1m', 'rro-sub', join(source, 'sub')]);
  });

  after(async () => {
    await run('umount', [join(source, 'sub')]).catch(() => undefined);
  });

  const tryWrite = (id: string, path: string): Promise<{ code: number; stderr: string }> => h.exec(id, ['sh', '-c', `touch ${path}`]);

  test('keeps every submount read-only, where readonly alone leaves them writable', async () => {
    const rroMount = { container_path: '/data', host_path: source, readonly: true, recursive_read_only: true };
    if (UNDER_GVISOR) {
      await rejectsWithCode(h.createContainer(pod, `rro-${++counter}`, { mounts: [rroMount] }), status.INVALID_ARGUMENT, /"runsc" does not support recursive read-only mounts/);
    } else {
      const rro = await h.runContainer(pod, `rro-${++counter}`, { mounts: [rroMount] });
      assert.match((await tryWrite(rro, '/data/top')).stderr, /Read-only file system/);
      assert.match((await tryWrite(rro, '/data/sub/below')).stderr, /Read-only file system/);
    }

    const ro = await h.runContainer(pod, `ro-${++counter}`, { mounts: [{ container_path: '/data', host_path: source, readonly: true }] });
    assert.match((await tryWrite(ro, '/data/top')).stderr, /Read-only file system/);
    assert.equal((await tryWrite(ro, '/data/sub/below')).code, 0);

    const { runtime_handlers } = await callUnary(h.runtime, 'Status', {});
    // Every handler but gVisor's (see runtime-gvisor.test.ts) makes them.
    assert.ok(runtime_handlers.filter((r) => r.name !== 'runsc').every((r) => r.features?.recursive_read_only_mounts === true));
  });

  test('without readonly, or with another propagation, it is refused', async () => {
    for (const mount of [
      { container_path: '/data', host_path: source, readonly: false, recursive_read_only: true },
      { container_path: '/data', host_path: source, readonly: true, recursive_read_only: true, propagation: 'PROPAGATION_HOST_TO_CONTAINER' as const },
    ]) {
      await rejectsWithCode(h.createContainer(pod, `rro-bad-${++counter}`, { mounts: [mount] }), status.INVALID_ARGUMENT, /recursive_read_only needs readonly and private propagation/);
    }
  });
});

describe('mount options', () => {
  test('extra options apply to the bind, and ones runc would ignore are refused', async () => {
    const dir = join(h.skiff.dir, 'options-source');
    await mkdir(dir, { recursive: true });
    await run('cp', ['/bin/busybox', join(dir, 'busybox')]);
    const id = await h.runContainer(pod, `options-${++counter}`, { mounts: [{ container_path: '/opts', host_path: dir, mount_options: ['noexec', 'nodev'] }] });
    const exec = await h.exec(id, ['sh', '-c', '/opts/busybox true']);
    assert.notEqual(exec.code, 0);
    assert.match(exec.stderr, /Permission denied/);
    await rejectsWithCode(
      h.createContainer(pod, `options-bad-${++counter}`, { mounts: [{ container_path: '/opts', host_path: dir, mount_options: ['bogus'] }] }),
      status.INVALID_ARGUMENT,
      /mount_options bogus are not supported/,
    );
    const { features } = await callUnary(h.runtime, 'Status', {});
    assert.equal(features?.mount_options, true);
  });

  test('an option that would undo what the mount asks for is refused, naming both, and leaves nothing', async () => {
    const dir = join(h.skiff.dir, 'options-undo');
    await mkdir(dir, { recursive: true });
    const was = await h.settledInventory();
    for (const [mount, message] of [
      [{ readonly: true, mount_options: ['rw'] }, /mount \/opts: mount_options "rw" contradicts readonly: true: it would make the mount writable/],
      [{ readonly: true, recursive_read_only: true, mount_options: ['nosuid', 'rw'] }, /mount \/opts: mount_options "rw" contradicts recursive_read_only: true/],
    ] as const) {
      await rejectsWithCode(
        h.createContainer(pod, `options-undo-${++counter}`, { mounts: [{ container_path: '/opts', host_path: dir, ...mount, mount_options: [...mount.mount_options] }] }),
        status.INVALID_ARGUMENT,
        message,
      );
    }
    const now = await h.settledInventory();
    assert.deepEqual([now.mounts, now.containerDirs, now.runc], [was.mounts, was.containerDirs, was.runc]);
    // The read-only mount it asked for, without the contradiction, is read-only.
    const id = await h.runContainer(pod, `options-ro-${++counter}`, { mounts: [{ container_path: '/opts', host_path: dir, readonly: true, mount_options: ['ro', 'nodev'] }] });
    assert.match((await h.exec(id, ['touch', '/opts/x'])).stderr, /Read-only file system/);
  });
});

