// CRI RuntimeService.ListPodSandboxMetrics
import type { cri } from '@skiff/proto';
import type { RuntimeContext } from '../daemon/context.js';
import { allPodMetrics } from '../metrics/pod-metrics.js';
import type { StatsCollector } from '../stats/stats-collector.js';

export async function listPodSandboxMetricsCall(ctx: RuntimeContext, stats: StatsCollector): Promise<cri.ListPodSandboxMetricsResponse> {
  return { pod_metrics: await allPodMetrics(ctx, stats) };
}
