// CRI RuntimeService.ContainerStats
import type { cri } from '@skiff/proto';
import { refreshContainer } from '../container/container-state.js';
import { requireContainer } from '../container/require-container.js';
import type { RuntimeContext } from '../daemon/context.js';
import type { StatsCollector } from '../stats/stats-collector.js';

export async function containerStatsCall(ctx: RuntimeContext, stats: StatsCollector, request: cri.ContainerStatsRequest__Output): Promise<cri.ContainerStatsResponse> {
  const rec = await refreshContainer(ctx, requireContainer(ctx, 'ContainerStats', request.container_id));
  return { stats: await stats.containerStats(rec) };
}
