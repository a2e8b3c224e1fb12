// CRI RuntimeService.ListPodSandbox and RuntimeService.StreamPodSandboxes
import { podSandboxListEncoder, type cri } from '@skiff/proto';
import type { RuntimeContext } from '../daemon/context.js';
import { ListEntryCache } from '../listing/list-entry-cache.js';
import { filterSandboxes } from '../sandbox/sandbox-filter.js';
import { criSandboxContent, toCriSandbox } from '../sandbox/sandbox-view.js';
import type { SandboxRecord } from '../state/records.js';

/** The entries listings return, encoded once per content (see ListEntryCache). */
const listEntries = new ListEntryCache<SandboxRecord, cri.PodSandbox>(podSandboxListEncoder.seal);

export async function listPodSandboxCall(ctx: RuntimeContext, request: cri.ListPodSandboxRequest__Output): Promise<cri.ListPodSandboxResponse> {
  const matching = await filterSandboxes(ctx, request.filter);
  return { items: matching.map(({ rec, ready }) => listEntries.entryFor(rec, criSandboxContent(rec, ready), () => toCriSandbox(rec, ready))) };
}

/** StreamPodSandboxes: the ListPodSandbox entries, which the server sends in batches. */
export async function streamPodSandboxesCall(ctx: RuntimeContext, request: cri.StreamPodSandboxesRequest__Output): Promise<cri.PodSandbox[]> {
  return (await listPodSandboxCall(ctx, { filter: request.filter })).items ?? [];
}
