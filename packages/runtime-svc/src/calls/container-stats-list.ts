// CRI RuntimeService.ListContainerStats and RuntimeService.StreamContainerStats
import type { cri } from '@skiff/proto';
import { filterContainers } from '../container/container-filter.js';
import type { RuntimeContext } from '../daemon/context.js';
import type { StatsCollector } from '../stats/stats-collector.js';

export async function listContainerStatsCall(ctx: RuntimeContext, stats: StatsCollector, request: cri.ListContainerStatsRequest__Output): Promise<cri.ListContainerStatsResponse> {
  const containers = await filterContainers(ctx, request.filter);
  return { stats: await Promise.all(containers.map((c) => stats.containerStats(c))) };
}

/** StreamContainerStats: the ListContainerStats entries, which the server sends in batches. */
export async function streamContainerStatsCall(ctx: RuntimeContext, stats: StatsCollector, request: cri.StreamContainerStatsRequest__Output): Promise<cri.ContainerStats[]> {
  return (await listContainerStatsCall(ctx, stats, { filter: request.filter })).stats ?? [];
}
