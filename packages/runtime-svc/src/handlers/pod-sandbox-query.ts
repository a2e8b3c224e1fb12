import { podSandboxListEncoder, type cri } from '@skiff/proto';
import { idsWithExitFiles } from '../conmon/exit-file.js';
import type { RuntimeContext } from '../daemon/context.js';
import { requireSandbox } from '../sandbox/sandbox-lifecycle.js';
import { sandboxIsReady } from '../sandbox/sandbox-state.js';
import { criSandboxContent, sandboxState, sandboxVerboseInfo, toCriSandbox, toCriSandboxStatus } from '../sandbox/sandbox-view.js';
import type { SandboxRecord } from '../state/records.js';
import { compareCreationTimes } from '../listing/creation-order.js';
import { matchesLabels } from '../listing/label-selector.js';
import { ListEntryCache } from '../listing/list-entry-cache.js';
import { nowNanos } from '../util/time.js';

export async function podSandboxStatus(ctx: RuntimeContext, request: cri.PodSandboxStatusRequest__Output): Promise<cri.PodSandboxStatusResponse> {
  const rec = requireSandbox(ctx, request.pod_sandbox_id);
  const ready = await sandboxIsReady(ctx, rec);
  const response: cri.PodSandboxStatusResponse = { status: toCriSandboxStatus(rec, ready), timestamp: nowNanos() };
  if (request.verbose) response.info = sandboxVerboseInfo(rec, ctx.paths.sandbox(rec.id).bundle);
  return response;
}

/** Sandboxes matching a filter (id exact or prefix, state, labels), oldest first. */
export async function filterSandboxes(ctx: RuntimeContext, filter: cri.PodSandboxFilter__Output | null): Promise<{ rec: SandboxRecord; ready: boolean }[]> {
  const exitFiles = await idsWithExitFiles(ctx.paths.exitDir);
  const matching = [...ctx.state.sandboxes.values()].filter(
    (rec) => (!filter?.id || rec.id.startsWith(filter.id)) && matchesLabels(rec.labels, filter?.label_selector),
  );
  // Each check reads /proc; run them together rather than one after another.
  const checked = await Promise.all(matching.map(async (rec) => ({ rec, ready: await sandboxIsReady(ctx, rec, exitFiles) })));
  const out = filter?.state ? checked.filter(({ ready }) => filter.state?.state === sandboxState(ready)) : checked;
  return out.sort((a, b) => compareCreationTimes(a.rec.createdAt, b.rec.createdAt));
}

/** The entries listings return, encoded once per content (see ListEntryCache). */
const listEntries = new ListEntryCache<SandboxRecord, cri.PodSandbox>(podSandboxListEncoder.seal);

export async function listPodSandbox(ctx: RuntimeContext, request: cri.ListPodSandboxRequest__Output): Promise<cri.ListPodSandboxResponse> {
  const matching = await filterSandboxes(ctx, request.filter);
  return { items: matching.map(({ rec, ready }) => listEntries.entryFor(rec, criSandboxContent(rec, ready), () => toCriSandbox(rec, ready))) };
}

/** The kubelet has already resized the pod's cgroup; nothing of ours depends on the figures. */
export async function updatePodSandboxResources(ctx: RuntimeContext, request: cri.UpdatePodSandboxResourcesRequest__Output): Promise<cri.UpdatePodSandboxResourcesResponse> {
  requireSandbox(ctx, request.pod_sandbox_id);
  return {};
}
