import type { cri } from '@skiff/proto';
import { idsWithExitFiles } from '../conmon/exit-file.js';
import type { RuntimeContext } from '../daemon/context.js';
import { requireSandbox } from '../sandbox/sandbox-lifecycle.js';
import { sandboxIsReady } from '../sandbox/sandbox-state.js';
import { sandboxState, sandboxVerboseInfo, toCriSandbox, toCriSandboxStatus } from '../sandbox/sandbox-view.js';
import type { SandboxRecord } from '../state/records.js';
import { matchesLabels } from '../util/label-selector.js';
import { compareNanos, nowNanos } from '../util/time.js';

export async function podSandboxStatus(ctx: RuntimeContext, request: cri.PodSandboxStatusRequest__Output): Promise<cri.PodSandboxStatusResponse> {
  const rec = requireSandbox(ctx, request.pod_sandbox_id);
  const ready = await sandboxIsReady(ctx, rec);
  const response: cri.PodSandboxStatusResponse = { status: toCriSandboxStatus(rec, ready), timestamp: nowNanos() };
  if (request.verbose) response.info = sandboxVerboseInfo(rec, ctx.paths.sandbox(rec.id).bundle);
  return response;
}

/** Sandboxes matching a filter (id exact or prefix, state, labels), oldest first. */
export async function filterSandboxes(ctx: RuntimeContext, filter: cri.PodSandboxFilter__Output | null): Promise<{ rec: SandboxRecord; ready: boolean }[]> {
  const out: { rec: SandboxRecord; ready: boolean }[] = [];
  const exitFiles = await idsWithExitFiles(ctx.paths.exitDir);
  for (const rec of ctx.state.sandboxes.values()) {
    if (filter?.id && !rec.id.startsWith(filter.id)) continue;
    if (!matchesLabels(rec.labels, filter?.label_selector)) continue;
    const ready = await sandboxIsReady(ctx, rec, exitFiles);
    if (filter?.state && filter.state.state !== sandboxState(ready)) continue;
    out.push({ rec, ready });
  }
  return out.sort((a, b) => compareNanos(a.rec.createdAt, b.rec.createdAt));
}

export async function listPodSandbox(ctx: RuntimeContext, request: cri.ListPodSandboxRequest__Output): Promise<cri.ListPodSandboxResponse> {
  return { items: (await filterSandboxes(ctx, request.filter)).map(({ rec, ready }) => toCriSandbox(rec, ready)) };
}

/** The kubelet has already resized the pod's cgroup; nothing of ours depends on the figures. */
export async function updatePodSandboxResources(ctx: RuntimeContext, request: cri.UpdatePodSandboxResourcesRequest__Output): Promise<cri.UpdatePodSandboxResourcesResponse> {
  requireSandbox(ctx, request.pod_sandbox_id);
  return {};
}
