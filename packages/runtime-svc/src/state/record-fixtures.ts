import type { ContainerPhase, ContainerRecord, SandboxPhase, SandboxRecord } from './records.js';

/** A container record for unit tests: busybox, no mounts, no log; `extra` overrides any field. */
export function containerRecordFixture(id: string, sandboxId: string, phase: ContainerPhase, extra: Partial<ContainerRecord> = {}): ContainerRecord {
  return {
    version: 1,
    id,
    sandboxId,
    phase,
    metadata: { name: 'app', attempt: 0 },
    fullName: 'k8s_app',
    nameKey: 'app',
    runtimeHandler: '',
    image: { requested: 'busybox', id: `sha256:${'1'.repeat(64)}`, ref: `registry.test/busybox@sha256:${'2'.repeat(64)}`, display: 'registry.test/busybox:latest' },
    createdAt: '1700000000000000000',
    labels: {},
    annotations: {},
    mounts: [],
    logPath: '',
    resources: null,
    user: { uid: 0, gid: 0, supplementalGroups: [] },
    stopSignal: 15,
    criStopSignal: 'SIGNAL_RUNTIME_DEFAULT',
    cgroupsPath: '',
    tty: false,
    stdin: false,
    stdinOnce: false,
    rootfsMounted: false,
    ...extra,
  };
}

/** A sandbox record for unit tests: pod network, no log directory, no process; `extra` overrides any field. */
export function sandboxRecordFixture(id: string, phase: SandboxPhase, extra: Partial<SandboxRecord> = {}): SandboxRecord {
  return {
    version: 1,
    id,
    phase,
    metadata: { name: 'pod', uid: 'uid', namespace: 'default', attempt: 0 },
    createdAt: '1700000000000000000',
    runtimeHandler: '',
    labels: {},
    annotations: {},
    hostname: 'pod',
    logDirectory: '',
    namespaces: { network: 'POD', pid: 'CONTAINER', ipc: 'POD' },
    privileged: false,
    cgroupParent: '',
    cgroupsPath: '',
    podCgroupGiven: false,
    sysctls: {},
    portMappings: [],
    ips: [],
    shmMounted: false,
    dnsConfig: { servers: [], searches: [], options: [] },
    ...extra,
  };
}
