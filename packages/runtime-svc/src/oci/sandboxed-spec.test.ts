import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { status } from '@grpc/grpc-js';
import type { cri } from '@skiff/proto';
import { adaptSpecToSandbox, checkContainerFeatures, checkSandboxFeatures } from './sandboxed-spec.js';
import { buildSpec, DEFAULT_MASKED_PATHS, DEFAULT_READONLY_PATHS, type NamespacesInput, type SeccompInput } from './spec-builder.js';
import { Runc } from './runc.js';
import type { RuntimeHandler } from '../daemon/runtime-handlers.js';
import type { HostFacts } from './host-facts.js';

const FACTS: HostFacts = {
  oomScoreAdj: 0,
  boundingCapabilities: ['CAP_CHOWN', 'CAP_KILL'],
  apparmorEnabled: false,
  apparmorDefaultProfileLoaded: false,
  cgroupV1Controllers: ['cpu', 'memory', 'pids'],
  cgroupVersion: 1,
};

function namespacesOf(namespaces: NamespacesInput): { type: string; path?: string }[] {
  const spec = adaptSpecToSandbox(buildSpec({ rootfs: '/bundle/rootfs', args: ['sh'], namespaces }, FACTS), false);
  return (spec.linux.namespaces ?? []).filter((ns) => ns.type !== 'mount' && ns.type !== 'cgroup');
}

describe('a container of a sandbox-kind runtime (runsc)', () => {
  it("names no PID namespace for the pod's, which runsc then runs it in; the others are left as they are", () => {
    const pod = (kind: string): { mode: 'join'; path: string } => ({ mode: 'join', path: `/var/lib/skiff/runtime/sandboxes/p/${kind}ns` });
    assert.deepEqual(namespacesOf({ network: { mode: 'join', path: '/run/skiff/netns/p' }, ipc: pod('ipc'), uts: pod('uts'), pid: pod('pid') }), [
      { type: 'network', path: '/run/skiff/netns/p' },
      { type: 'ipc', path: '/var/lib/skiff/runtime/sandboxes/p/ipcns' },
      { type: 'uts', path: '/var/lib/skiff/runtime/sandboxes/p/utsns' },
    ]);
  });

  it('keeps a PID namespace of its own', () => {
    assert.deepEqual(namespacesOf({ pid: { mode: 'new' } }).filter((ns) => ns.type === 'pid'), [{ type: 'pid' }]);
  });
});

function runscHandler(args: string[]): RuntimeHandler {
  return { name: 'runsc', kind: 'sandbox', runc: new Runc({ binary: '/usr/bin/runsc', root: '/run/skiff/runtimes/runsc', extraArgs: args }) };
}

const WITH_SECCOMP = runscHandler(['--platform=systrap', '--oci-seccomp']);
const WITHOUT_SECCOMP = runscHandler(['--platform=systrap']);
const RUNTIME_DEFAULT: SeccompInput = { kind: 'runtime-default' };
const UNCONFINED: SeccompInput = { kind: 'unconfined' };

function containerConfig(security: Partial<cri.LinuxContainerSecurityContext__Output>): cri.ContainerConfig__Output {
  return { mounts: [], linux: { security_context: security } } as unknown as cri.ContainerConfig__Output;
}

function refusal(handler: RuntimeHandler, security: Partial<cri.LinuxContainerSecurityContext__Output>, seccomp: SeccompInput): string | undefined {
  try {
    checkContainerFeatures(handler, containerConfig(security), seccomp);
    return undefined;
  } catch (err) {
    assert.equal((err as { code?: number }).code, status.INVALID_ARGUMENT);
    return (err as Error).message;
  }
}

describe("the security a runsc container asks for that gVisor would not apply", () => {
  it('a seccomp profile is accepted only where runsc applies it (--oci-seccomp)', () => {
    assert.equal(refusal(WITH_SECCOMP, {}, RUNTIME_DEFAULT), undefined);
    assert.equal(refusal(WITH_SECCOMP, {}, { kind: 'localhost', profile: { defaultAction: 'SCMP_ACT_ALLOW' } }), undefined);
    assert.match(refusal(WITHOUT_SECCOMP, {}, RUNTIME_DEFAULT) ?? '', /without runsc's --oci-seccomp flag.*seccomp runtime-default/);
    assert.equal(refusal(WITHOUT_SECCOMP, {}, UNCONFINED), undefined);
    assert.equal(refusal(WITHOUT_SECCOMP, { privileged: true }, RUNTIME_DEFAULT), undefined, 'a privileged container gets no filter anyway');
  });

  it('masked and read-only paths outside /proc and /sys are refused, naming the field and the paths', () => {
    assert.equal(refusal(WITH_SECCOMP, { masked_paths: [...DEFAULT_MASKED_PATHS, '/proc/interrupts'], readonly_paths: [...DEFAULT_READONLY_PATHS, '/proc/asound'] }, UNCONFINED), undefined);
    assert.match(refusal(WITH_SECCOMP, { masked_paths: ['/proc/../etc/shadow'] }, UNCONFINED) ?? '', /masked_paths \/proc\/\.\.\/etc\/shadow/);
    assert.match(refusal(WITH_SECCOMP, { readonly_paths: ['/system'] }, UNCONFINED) ?? '', /readonly_paths \/system/);
    assert.match(refusal(WITH_SECCOMP, { masked_paths: ['/proc/kcore', '/bin/ls'] }, UNCONFINED) ?? '', /cannot mask paths \(masked_paths \/bin\/ls\)/);
    assert.match(refusal(WITH_SECCOMP, { readonly_paths: ['/tmp'] }, UNCONFINED) ?? '', /cannot make paths read-only \(readonly_paths \/tmp\)/);
  });

  it('a mount with bidirectional propagation is refused, naming it', () => {
    const config = { mounts: [{ container_path: '/mnt/shared', host_path: '/tmp/x', propagation: 'PROPAGATION_BIDIRECTIONAL' }], linux: null } as unknown as cri.ContainerConfig__Output;
    assert.throws(() => checkContainerFeatures(WITH_SECCOMP, config, UNCONFINED), (err: Error & { code?: number }) => err.code === status.INVALID_ARGUMENT && /mount \/mnt\/shared cannot have bidirectional \(rshared\) propagation/.test(err.message));
    const hostToContainer = { mounts: [{ container_path: '/mnt', host_path: '/tmp/x', propagation: 'PROPAGATION_HOST_TO_CONTAINER' }], linux: null } as unknown as cri.ContainerConfig__Output;
    assert.doesNotThrow(() => checkContainerFeatures(WITH_SECCOMP, hostToContainer, UNCONFINED));
  });

  it('a PID namespace TARGET is refused', () => {
    assert.match(refusal(WITH_SECCOMP, { namespace_options: { pid: 'TARGET' } as cri.NamespaceOption__Output }, UNCONFINED) ?? '', /cannot join another container's PID namespace/);
  });

  it('runc honours all of it', () => {
    const runc: RuntimeHandler = { name: '', kind: 'oci', runc: new Runc({}) };
    assert.equal(refusal(runc, { masked_paths: ['/bin/ls'], readonly_paths: ['/tmp'] }, RUNTIME_DEFAULT), undefined);
  });
});

describe('the sysctls of a runsc pod', () => {
  it('are refused unless they are net.* ones, which Skiff sets in the pod network namespace', () => {
    assert.doesNotThrow(() => checkSandboxFeatures(WITH_SECCOMP, false, { 'net.ipv4.ip_local_port_range': '40000 40010' }));
    assert.throws(
      () => checkSandboxFeatures(WITH_SECCOMP, false, { 'net.ipv4.tcp_syncookies': '1', 'kernel.shm_rmid_forced': '1', 'fs.mqueue.msg_max': '100' }),
      (err: Error & { code?: number }) => err.code === status.INVALID_ARGUMENT && /sets no sysctl: kernel\.shm_rmid_forced, fs\.mqueue\.msg_max cannot be applied/.test(err.message),
    );
    assert.doesNotThrow(() => checkSandboxFeatures({ name: '', kind: 'oci', runc: new Runc({}) }, false, { 'kernel.shm_rmid_forced': '1' }));
  });
});
