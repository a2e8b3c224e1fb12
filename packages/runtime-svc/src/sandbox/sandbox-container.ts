import { promises as fs } from 'node:fs';
import { awaitCreateInFlight } from '../container/container-teardown.js';
import { createContainerWithMonitor, removeMonitorFiles, type MonitoredContainer } from '../conmon/conmon.js';
import type { RuntimeContext } from '../daemon/context.js';
import type { SandboxPaths } from '../daemon/paths.js';
import { buildSpec, type ContainerSpecInput, type NamespaceMode } from '../oci/spec-builder.js';
import type { Spec } from '../oci/runtime-spec.js';
import type { SandboxRecord } from '../state/records.js';

/** Where catatonit appears inside the sandbox's otherwise empty root filesystem. */
const CATATONIT_IN_SANDBOX = '/catatonit';

/** The pod's /dev/shm: a tmpfs of its own, or the host's with the host IPC namespace. */
export function shmMount(rec: SandboxRecord, paths: SandboxPaths): { destination: string; type: string; source: string; options: string[] } {
  return { destination: '/dev/shm', type: 'bind', source: rec.shmMounted ? paths.shm : '/dev/shm', options: ['rbind', 'rprivate', 'rw'] };
}

/**
 * The sandbox container: catatonit -P (reaps zombies, waits for a signal) as PID 1 of the pod's
 * namespaces, from a read-only, otherwise empty root filesystem, with no capabilities.
 */
export function sandboxSpecInput(ctx: RuntimeContext, rec: SandboxRecord, paths: SandboxPaths, netnsPath: string): ContainerSpecInput {
  const hostNetwork = rec.namespaces.network === 'NODE';
  const network: NamespaceMode = hostNetwork ? { mode: 'host' } : { mode: 'join', path: netnsPath };
  return {
    rootfs: paths.rootfs,
    readonlyRootfs: true,
    args: [CATATONIT_IN_SANDBOX, '-P'],
    hostname: rec.hostname,
    mounts: [{ containerPath: CATATONIT_IN_SANDBOX, hostPath: ctx.config.runtime.catatonit, readonly: true }],
    extraMounts: [shmMount(rec, paths)],
    namespaces: {
      network,
      uts: hostNetwork ? { mode: 'host' } : { mode: 'new' },
      ipc: rec.namespaces.ipc === 'NODE' ? { mode: 'host' } : { mode: 'new' },
      pid: rec.namespaces.pid === 'NODE' ? { mode: 'host' } : { mode: 'new' },
    },
    cgroupsPath: rec.cgroupsPath,
    sysctls: rec.sysctls,
    oomScoreAdj: -998,
    capabilities: { drop: ['ALL'] },
    noNewPrivileges: true,
    seccomp: { kind: 'runtime-default' },
    annotations: {
      'io.kubernetes.cri.container-type': 'sandbox',
      'io.kubernetes.cri.sandbox-id': rec.id,
      'io.kubernetes.cri.sandbox-name': rec.metadata.name,
      'io.kubernetes.cri.sandbox-namespace': rec.metadata.namespace,
      'io.kubernetes.cri.sandbox-uid': rec.metadata.uid,
    },
  };
}

export function buildSandboxSpec(ctx: RuntimeContext, rec: SandboxRecord, paths: SandboxPaths, netnsPath: string): Spec {
  return buildSpec(sandboxSpecInput(ctx, rec, paths, netnsPath), ctx.facts);
}

/** Writes config.json and creates the sandbox container under conmon (runc state "created"). */
export async function createSandboxContainer(ctx: RuntimeContext, rec: SandboxRecord, paths: SandboxPaths, spec: Spec): Promise<MonitoredContainer> {
  const handler = ctx.handlers.resolve(rec.runtimeHandler);
  await fs.writeFile(paths.spec, JSON.stringify(spec), { mode: 0o600 });
  return createContainerWithMonitor({
    conmonPath: ctx.config.runtime.conmon,
    runtime: handler.runc.binaryForConmon,
    id: rec.id,
    name: `k8s_POD_${rec.metadata.name}_${rec.metadata.namespace}_${rec.metadata.uid}_${rec.metadata.attempt}`,
    bundle: paths.bundle,
    containerPidFile: paths.pidFile,
    conmonPidFile: paths.conmonPidFile,
    exitDir: ctx.paths.exitDir,
    persistDir: paths.persist,
    socketDir: ctx.paths.attachDir,
    logDrivers: [{ driver: 'k8s-file', path: paths.consoleLog }],
    logSizeMax: 1024 * 1024,
  });
}

/** Deletes the sandbox container from runc (killing it if needed; after a create in flight) and conmon's leftovers. */
export async function deleteSandboxContainer(ctx: RuntimeContext, rec: SandboxRecord): Promise<void> {
  const handler = ctx.handlers.forExisting(rec.runtimeHandler);
  // Only a RunPodSandbox that never finished can have a `runc create` still running.
  if (rec.phase === 'creating') await awaitCreateInFlight(rec.id, handler.runc.root);
  await handler.runc.delete(rec.id, { force: true });
  await removeMonitorFiles({ id: rec.id, exitDir: ctx.paths.exitDir, socketDir: ctx.paths.attachDir });
}
