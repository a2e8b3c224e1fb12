import type { RuntimeHandlerKind } from '@skiff/common';
import type { SandboxRecord } from '../state/records.js';

/**
 * Why a pod needs a pause process (catatonit as its PID 1), or undefined when it runs without one.
 * A pod's network, user, IPC and UTS namespaces are held by their bind-mounted files, so only
 * what a file cannot hold needs the pause:
 * - a PID namespace shared by the pod's containers (shareProcessNamespace): it needs an init, and
 *   dies with it;
 * - a sandbox-kind runtime (runsc): the pause is the sandbox, its kernel;
 * - `runtime.pause_every_pod`, an operator's choice.
 * The kubelet's default pod (a PID namespace per container) under runc has none, as CRI-O runs
 * it; its sysctls, if it sets any, are written into its namespaces (pod-sysctls.ts).
 */
export function pauseReason(
  rec: Pick<SandboxRecord, 'namespaces'>,
  handlerKind: RuntimeHandlerKind,
  pauseEveryPod: boolean,
): string | undefined {
  if (pauseEveryPod) return 'runtime.pause_every_pod is set';
  if (handlerKind === 'sandbox') return 'its runtime runs the pod as one sandbox';
  if (rec.namespaces.pid === 'POD') return 'its containers share a PID namespace';
  return undefined;
}
