// CRI RuntimeService.StreamPodSandboxMetrics
import type { cri } from '@skiff/proto';
import type { RuntimeContext } from '../daemon/context.js';
import { allPodMetrics } from '../metrics/pod-metrics.js';
import type { StatsCollector } from '../stats/stats-collector.js';

/** The same pods as ListPodSandboxMetrics, for the batched stream. */
export function streamPodSandboxMetricsCall(ctx: RuntimeContext, stats: StatsCollector): Promise<cri.PodSandboxMetrics[]> {
  return allPodMetrics(ctx, stats);
}
