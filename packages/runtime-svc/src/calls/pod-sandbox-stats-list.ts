// CRI RuntimeService.ListPodSandboxStats and RuntimeService.StreamPodSandboxStats
import type { cri } from '@skiff/proto';
import { refreshContainer } from '../container/container-state.js';
import type { RuntimeContext } from '../daemon/context.js';
import { filterSandboxes } from '../sandbox/sandbox-filter.js';
import type { StatsCollector } from '../stats/stats-collector.js';

export async function listPodSandboxStatsCall(ctx: RuntimeContext, stats: StatsCollector, request: cri.ListPodSandboxStatsRequest__Output): Promise<cri.ListPodSandboxStatsResponse> {
  const filter = request.filter ? { id: request.filter.id, label_selector: request.filter.label_selector, state: null } : null;
  const sandboxes = await filterSandboxes(ctx, filter);
  const out: cri.PodSandboxStats[] = [];
  for (const { rec } of sandboxes) {
    const containers = ctx.state.containersOf(rec.id);
    for (const c of containers) await refreshContainer(ctx, c);
    out.push(await stats.podStats(rec, containers));
  }
  return { stats: out };
}

/** StreamPodSandboxStats: the ListPodSandboxStats entries, which the server sends in batches. */
export async function streamPodSandboxStatsCall(ctx: RuntimeContext, stats: StatsCollector, request: cri.StreamPodSandboxStatsRequest__Output): Promise<cri.PodSandboxStats[]> {
  return (await listPodSandboxStatsCall(ctx, stats, { filter: request.filter })).stats ?? [];
}
