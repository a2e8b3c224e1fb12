import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import type { cri } from '@skiff/proto';
import { portMappingsOf, sandboxRecordFromRequest } from './sandbox-config.js';

const ID = 'f'.repeat(64);
const defaults = { cgroupParent: '/skiff', cgroupDriver: 'cgroupfs' as const, defaultHandler: '' };

function request(config: Partial<cri.PodSandboxConfig__Output> | null, handler = ''): cri.RunPodSandboxRequest__Output {
  if (config === null) return { config: null, runtime_handler: handler };
  return {
    runtime_handler: handler,
    config: {
      metadata: { name: 'web', namespace: 'default', uid: 'uid-1', attempt: 1 },
      hostname: '',
      log_directory: '/var/log/pods/x',
      dns_config: null,
      port_mappings: [],
      labels: { app: 'web' },
      annotations: { a: 'b' },
      linux: null,
      windows: null,
      ...config,
    },
  };
}

describe('sandbox record from RunPodSandbox', () => {
  it('records the handler that runs the pod: the one asked for, else the default handler', () => {
    assert.equal(sandboxRecordFromRequest(ID, request({}), defaults, '42').runtimeHandler, '');
    assert.equal(sandboxRecordFromRequest(ID, request({}), { ...defaults, defaultHandler: 'runc' }, '42').runtimeHandler, '');
    assert.equal(sandboxRecordFromRequest(ID, request({}), { ...defaults, defaultHandler: 'runsc' }, '42').runtimeHandler, 'runsc');
    const asked = { ...request({}), runtime_handler: 'runc' };
    assert.equal(sandboxRecordFromRequest(ID, asked, { ...defaults, defaultHandler: 'runsc' }, '42').runtimeHandler, 'runc');
  });

  it('fills defaults: pod namespaces, hostname from the name, our cgroup parent', () => {
    const rec = sandboxRecordFromRequest(ID, request({}), defaults, '42');
    assert.equal(rec.phase, 'creating');
    assert.deepEqual(rec.namespaces, { network: 'POD', pid: 'POD', ipc: 'POD' });
    assert.equal(rec.hostname, 'web');
    assert.equal(rec.cgroupsPath, `/skiff/${ID}`);
    assert.equal(rec.podCgroupGiven, false);
    assert.deepEqual(rec.labels, { app: 'web' });
    assert.equal(rec.createdAt, '42');
  });

  it('takes the kubelet cgroup parent, host namespaces, sysctls and port mappings', () => {
    const rec = sandboxRecordFromRequest(
      ID,
      request({
        hostname: 'h',
        port_mappings: [
          { protocol: 'UDP', container_port: 53, host_port: 5353, host_ip: '127.0.0.1' },
          { protocol: 'TCP', container_port: 80, host_port: 0, host_ip: '' },
        ],
        linux: {
          cgroup_parent: '/kubepods/pod1',
          sysctls: { 'net.ipv4.ip_unprivileged_port_start': '0' },
          overhead: null,
          resources: null,
          security_context: {
            namespace_options: { network: 'POD', pid: 'CONTAINER', ipc: 'NODE', target_id: '', userns_options: null },
            selinux_options: null,
            run_as_user: null,
            run_as_group: null,
            readonly_rootfs: false,
            supplemental_groups: [],
            supplemental_groups_policy: 'Merge',
            privileged: true,
            seccomp: null,
            apparmor: null,
            seccomp_profile_path: '',
          },
        },
      }),
      defaults,
      '1',
    );
    assert.equal(rec.cgroupsPath, `/kubepods/pod1/${ID}`);
    assert.equal(rec.podCgroupGiven, true);
    assert.deepEqual(rec.namespaces, { network: 'POD', pid: 'CONTAINER', ipc: 'NODE' });
    assert.equal(rec.privileged, true);
    assert.deepEqual(rec.portMappings, [{ hostPort: 5353, containerPort: 53, protocol: 'udp', hostIP: '127.0.0.1' }]);
    assert.deepEqual(rec.sysctls, { 'net.ipv4.ip_unprivileged_port_start': '0' });
  });

  it('refuses incomplete or unsupported requests with InvalidArgument', () => {
    const invalid = (e: Error & { code?: number }) => e.code === 3;
    assert.throws(() => sandboxRecordFromRequest(ID, request(null), defaults, '1'), invalid);
    assert.throws(() => sandboxRecordFromRequest(ID, request({ metadata: { name: 'x', namespace: '', uid: 'u', attempt: 0 } }), defaults, '1'), /metadata\.namespace/);
    assert.throws(() => portMappingsOf([{ protocol: 'TCP', container_port: 0, host_port: 80, host_ip: '' }]), invalid);
  });
});
