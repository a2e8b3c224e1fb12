/**
 * The runtime's own view over CRI (ListPodSandbox, ListContainers on the harness's client), asked
 * again while a killed runtime-svc comes back.
 *
 *   sandboxes(ctx, uid?): Promise<PodSandbox[]>     all, or those of one Pod object's uid
 *   containers(ctx, sandboxId?): Promise<Container[]>
 */
import { callUnary, type cri } from '@skiff/proto';
import { until } from '../lib/skiff-instance.js';
import type { SoakContext } from './context.js';

export type PodSandbox = cri.PodSandbox__Output;
export type Container = cri.Container__Output;

export function sandboxes(ctx: SoakContext, uid?: string): Promise<PodSandbox[]> {
  const filter = uid === undefined ? {} : { filter: { label_selector: { 'io.kubernetes.pod.uid': uid } } };
  return until('ListPodSandbox', 90_000, async () => (await callUnary(ctx.h.runtime, 'ListPodSandbox', filter, { timeoutMs: 10_000 })).items);
}

export function containers(ctx: SoakContext, sandboxId?: string): Promise<Container[]> {
  const filter = sandboxId === undefined ? {} : { filter: { pod_sandbox_id: sandboxId } };
  return until('ListContainers', 90_000, async () => (await callUnary(ctx.h.runtime, 'ListContainers', filter, { timeoutMs: 10_000 })).containers);
}
