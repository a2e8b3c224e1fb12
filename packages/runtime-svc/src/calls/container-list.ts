// CRI RuntimeService.ListContainers and RuntimeService.StreamContainers
import { containerListEncoder, type cri } from '@skiff/proto';
import { filterContainers } from '../container/container-filter.js';
import { criContainerContent, toCriContainer } from '../container/container-view.js';
import type { RuntimeContext } from '../daemon/context.js';
import { ListEntryCache } from '../listing/list-entry-cache.js';
import type { ContainerRecord } from '../state/records.js';

/** The entries listings return, encoded once per content (see ListEntryCache). */
const listEntries = new ListEntryCache<ContainerRecord, cri.Container>(containerListEncoder.seal);

export async function listContainersCall(ctx: RuntimeContext, request: cri.ListContainersRequest__Output): Promise<cri.ListContainersResponse> {
  const recs = await filterContainers(ctx, request.filter);
  return { containers: recs.map((rec) => listEntries.entryFor(rec, criContainerContent(rec), () => toCriContainer(rec))) };
}

/** StreamContainers: the ListContainers entries, which the server sends in batches. */
export async function streamContainersCall(ctx: RuntimeContext, request: cri.StreamContainersRequest__Output): Promise<cri.Container[]> {
  return (await listContainersCall(ctx, { filter: request.filter })).containers ?? [];
}
