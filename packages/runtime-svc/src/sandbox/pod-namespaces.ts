import { promises as fs } from 'node:fs';
import { unmountFilesystem } from '@skiff/common';
import type { SandboxPaths } from '../daemon/paths.js';
import { mountPoints } from '../mounts/mountinfo.js';
import { runNativeHelper } from '../mounts/native-helpers.js';
import type { NamespaceMode } from '../oci/spec-builder.js';
import type { SandboxRecord } from '../state/records.js';
import type { PauseProcess } from './sandbox-container.js';

/**
 * A pod's namespaces live in files, not in its pause process: the network namespace and a user
 * namespace of its own are made and bind-mounted before the pause starts (cni/netns.ts); the IPC,
 * UTS and PID namespaces the pause makes are bind-mounted right after it started
 * (helpers/pin-namespaces.c, which checks it is that very process). A pod without a pause
 * (pause-decision.ts) has no PID namespace of its own, and its IPC and UTS namespaces are made on
 * their files by helpers/pod-ipc-uts.c (makePodNamespaces). The pod's containers join
 * these files, and the id-mapped mounts take the user namespace from its file, so a pid that
 * another process got after the pause exited can never hand them foreign namespaces.
 *
 * A pinned PID namespace whose init (the pause) has died can take no new process: runc fails to
 * join it, and a container of such a pod is refused before that, its sandbox being NOTREADY.
 */
export type PinnedNamespace = 'ipc' | 'uts' | 'pid';

/**
 * The namespaces the pod has of its own on files (the pause's, pinned; or made without one); the
 * others are the host's, but for the PID namespace of a pod without a pause, which has none:
 * each of its containers has its own.
 */
export function podOwnNamespaces(rec: Pick<SandboxRecord, 'namespaces' | 'pauseless'>): PinnedNamespace[] {
  const own: PinnedNamespace[] = [];
  if (rec.namespaces.ipc !== 'NODE') own.push('ipc');
  // A pod on the host network has the host's name.
  if (rec.namespaces.network !== 'NODE') own.push('uts');
  if (rec.namespaces.pid !== 'NODE' && !rec.pauseless) own.push('pid');
  return own;
}

export function pinnedNamespaceFile(paths: SandboxPaths, kind: PinnedNamespace): string {
  return paths[`${kind}ns`];
}

/** Joining the pod's namespace of `kind` (one it has of its own) through its pinned file. */
export function joinPinned(paths: SandboxPaths, kind: PinnedNamespace): NamespaceMode {
  return { mode: 'join', path: pinnedNamespaceFile(paths, kind) };
}

/**
 * Pins `kinds` of the pause's namespaces on their files (which must not exist). ProcessGoneError
 * when the pid is no longer that process; all or nothing.
 */
export async function pinPodNamespaces(paths: SandboxPaths, kinds: readonly PinnedNamespace[], pause: PauseProcess): Promise<void> {
  if (kinds.length === 0) return;
  const pairs = kinds.flatMap((kind) => [kind, pinnedNamespaceFile(paths, kind)]);
  await runNativeHelper('pin-namespaces', [String(pause.pid), String(pause.startTime), ...pairs], `pinning the namespaces of pause process ${pause.pid}`);
}

/**
 * The IPC and UTS namespaces of a pod without a pause, made on their files (which must not
 * exist) with no process left in them: owned by the pod's user namespace when it has one, the
 * UTS one named after the pod. All or nothing.
 */
export async function makePodNamespaces(rec: Pick<SandboxRecord, 'namespaces' | 'pauseless' | 'userns' | 'hostname'>, paths: SandboxPaths): Promise<void> {
  const kinds = podOwnNamespaces(rec).filter((kind) => kind !== 'pid');
  if (kinds.length === 0) return;
  const pairs = kinds.flatMap((kind) => [kind, pinnedNamespaceFile(paths, kind)]);
  const name = kinds.includes('uts') ? rec.hostname : '';
  await runNativeHelper('pod-ipc-uts', [rec.userns ? paths.userns : '', name, ...pairs], "making the pod's IPC and UTS namespaces");
}

/**
 * Pins what a ready pod lacks (a pod started before its namespaces were pinned): a file left
 * with nothing mounted on it is replaced.
 */
export async function pinMissingNamespaces(rec: Pick<SandboxRecord, 'namespaces'>, paths: SandboxPaths, pause: PauseProcess): Promise<PinnedNamespace[]> {
  const points = await mountPoints();
  const missing = podOwnNamespaces(rec).filter((kind) => !points.has(pinnedNamespaceFile(paths, kind)));
  await Promise.all(missing.map((kind) => fs.rm(pinnedNamespaceFile(paths, kind), { force: true })));
  await pinPodNamespaces(paths, missing, pause);
  return missing;
}

/**
 * Unmounts and removes every pin; tolerates their absence. The unmount is lazy: a namespace lives
 * on while a process is in it, but the pod lets go of it now.
 */
export async function unpinPodNamespaces(paths: SandboxPaths): Promise<void> {
  const points = await mountPoints();
  await Promise.all(
    (['ipc', 'uts', 'pid'] as const).map(async (kind) => {
      const file = pinnedNamespaceFile(paths, kind);
      if (points.has(file)) await unmountFilesystem(file, true);
      await fs.rm(file, { force: true });
    }),
  );
}
