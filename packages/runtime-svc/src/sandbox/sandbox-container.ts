import { promises as fs } from 'node:fs';
import { hostname } from 'node:os';
import { readPidFile } from '@skiff/common';
import { awaitCreateInFlight } from '../container/container-teardown.js';
import { removeMonitorFiles } from '../conmon/conmon.js';
import type { RuntimeContext } from '../daemon/context.js';
import type { SandboxPaths } from '../daemon/paths.js';
import { buildSpec, type ContainerSpecInput, type NamespaceMode, type SeccompInput } from '../oci/spec-builder.js';
import type { Spec } from '../oci/runtime-spec.js';
import { directSignals, stopContainer, stopUnmonitoredContainer } from '../oci/stop-container.js';
import type { SandboxRecord } from '../state/records.js';
import { isRunningState, readProcStat } from '../process/processes.js';
import { pauseProcessRunning } from './sandbox-state.js';
import { podOwnNamespaces, type PinnedNamespace } from './pod-namespaces.js';

/** Where catatonit appears inside the sandbox's otherwise empty root filesystem. */
const CATATONIT_IN_SANDBOX = '/catatonit';

/** The pod's /dev/shm: a tmpfs of its own, or the host's with the host IPC namespace. */
export function shmMount(rec: SandboxRecord, paths: SandboxPaths): { destination: string; type: string; source: string; options: string[] } {
  return { destination: '/dev/shm', type: 'bind', source: rec.shmMounted ? paths.shm : '/dev/shm', options: ['rbind', 'rprivate', 'rw'] };
}

/**
 * The sandbox container: catatonit -P (reaps zombies, waits for a signal) as PID 1 of the pod's
 * namespaces, from a read-only, otherwise empty root filesystem, with no capabilities. Its seccomp
 * profile is the one the pod's security context names (unconfined when it names none, as CRI
 * defines it): the pause process makes a handful of system calls, and compiling the default
 * filter would cost runc tens of milliseconds on every pod start.
 */
export function sandboxSpecInput(ctx: RuntimeContext, rec: SandboxRecord, paths: SandboxPaths, netnsPath: string, seccomp: SeccompInput): ContainerSpecInput {
  const network: NamespaceMode = rec.namespaces.network === 'NODE' ? { mode: 'host' } : { mode: 'join', path: netnsPath };
  const own = new Set(podOwnNamespaces(rec));
  const ownOrHost = (kind: PinnedNamespace): NamespaceMode => (own.has(kind) ? { mode: 'new' } : { mode: 'host' });
  return {
    rootfs: paths.rootfs,
    readonlyRootfs: true,
    args: [CATATONIT_IN_SANDBOX, '-P'],
    hostname: rec.hostname,
    mounts: [{ containerPath: CATATONIT_IN_SANDBOX, hostPath: ctx.config.runtime.catatonit, readonly: true }],
    extraMounts: [shmMount(rec, paths)],
    namespaces: {
      // Made (and mapped) before the pause starts, with the network namespace it owns; runc joins
      // it first, so the namespaces the pause makes belong to it too.
      user: rec.userns ? { mode: 'join', path: paths.userns } : { mode: 'host' },
      network,
      // Pinned on files once the pause runs (pod-namespaces.ts).
      uts: ownOrHost('uts'),
      ipc: ownOrHost('ipc'),
      pid: ownOrHost('pid'),
    },
    ...(rec.userns ? { idMappings: rec.userns } : {}),
    cgroupsPath: rec.cgroupsPath,
    sysctls: rec.sysctls,
    oomScoreAdj: -998,
    capabilities: { drop: ['ALL'] },
    noNewPrivileges: true,
    seccomp,
    annotations: {
      'io.kubernetes.cri.container-type': 'sandbox',
      'io.kubernetes.cri.sandbox-id': rec.id,
      'io.kubernetes.cri.sandbox-name': rec.metadata.name,
      'io.kubernetes.cri.sandbox-namespace': rec.metadata.namespace,
      'io.kubernetes.cri.sandbox-uid': rec.metadata.uid,
    },
  };
}

/**
 * Under runsc (--network=host) every socket call of the pod is made by the sandbox's host process,
 * whose capabilities runsc takes from this spec, and the host kernel checks a bind below 1024
 * against them. So the sandbox keeps CAP_NET_BIND_SERVICE, or no container of the pod could serve
 * port 80 whatever its own capabilities.
 */
const RUNSC_SANDBOX_CAPABILITIES = { drop: ['ALL'], add: ['CAP_NET_BIND_SERVICE'] };

export function buildSandboxSpec(ctx: RuntimeContext, rec: SandboxRecord, paths: SandboxPaths, netnsPath: string, seccomp: SeccompInput): Spec {
  const sandboxed = ctx.handlers.resolve(rec.runtimeHandler).kind === 'sandbox';
  const input = sandboxSpecInput(ctx, rec, paths, netnsPath, seccomp);
  const spec = buildSpec(sandboxed ? { ...input, capabilities: RUNSC_SANDBOX_CAPABILITIES } : input, ctx.facts);
  // On the host network a pod has the host's name; runsc's kernel has a name of its own, set to it.
  if (rec.namespaces.network === 'NODE' && sandboxed) spec.hostname = hostname();
  return spec;
}

/** The running pause process: its pid and start time (see SandboxRecord.pidStartTime). */
export interface PauseProcess {
  pid: number;
  startTime: number;
}

/**
 * Writes config.json and runs the sandbox container (`runc run --detach`). catatonit has no
 * output and nobody needs its exit code, so unlike the pod's containers it has no conmon: one
 * monitor fewer per pod, and one command fewer on the way to a ready pod. It outlives runtime-svc
 * all the same; readiness is its process being alive.
 */
export async function runSandboxContainer(ctx: RuntimeContext, rec: SandboxRecord, paths: SandboxPaths, spec: Spec): Promise<PauseProcess> {
  const runc = ctx.handlers.resolve(rec.runtimeHandler).runc;
  await fs.writeFile(paths.spec, JSON.stringify(spec), { mode: 0o600 });
  await runc.runDetached(rec.id, paths.bundle, { pidFile: paths.pidFile });
  const pid = await readPidFile(paths.pidFile);
  const stat = pid === undefined ? undefined : readProcStat(pid);
  if (pid === undefined || !stat || !isRunningState(stat.state)) {
    throw new Error(`the pause process of sandbox ${rec.id} exited as soon as it started (pid file ${paths.pidFile}: ${pid ?? 'empty'})`);
  }
  return { pid, startTime: stat.startTime };
}

/** Stops the pause process: SIGTERM, SIGKILL after `graceMs`. Nothing to do when it has exited. */
export async function stopSandboxContainer(ctx: RuntimeContext, rec: SandboxRecord, graceMs: number): Promise<void> {
  const handler = ctx.handlers.forExisting(rec.runtimeHandler);
  const runc = handler.runc;
  if (rec.pid === undefined) return;
  // A pause without a monitor whose process has ended needs no runc call to know it.
  if (rec.conmonPid === undefined && !(await pauseProcessRunning(rec))) return;
  if (rec.conmonPid !== undefined) {
    if (!(await runc.stateIfExists(rec.id))) return;
    await stopContainer(runc, rec.id, { exitDir: ctx.paths.exitDir, timeoutMs: graceMs, exitFileAppeared: ctx.exitWatch.nextExitFile });
    return;
  }
  // catatonit is sent SIGTERM directly: no `runc state` and `runc kill` on a pod's stop. A
  // sandbox-kind runtime's pause is its kernel, told through it.
  await stopUnmonitoredContainer(runc, rec.id, () => pauseProcessRunning(rec), { timeoutMs: graceMs, ...directSignals(handler.kind, rec, false) });
}

/** Deletes the sandbox container from runc (killing it if needed; after a run in flight) and, for a pause under conmon, conmon's leftovers. */
export async function deleteSandboxContainer(ctx: RuntimeContext, rec: SandboxRecord): Promise<void> {
  if (rec.pauseless) return;
  const handler = ctx.handlers.forExisting(rec.runtimeHandler);
  // Only a RunPodSandbox that never finished can have a runc command still running.
  if (rec.phase === 'creating') await awaitCreateInFlight(rec.id, handler.runc.root);
  await handler.runc.delete(rec.id, { force: true });
  await removeMonitorFiles({ id: rec.id, exitDir: ctx.paths.exitDir, socketDir: ctx.paths.attachDir });
}
