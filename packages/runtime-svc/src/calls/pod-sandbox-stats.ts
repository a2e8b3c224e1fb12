// CRI RuntimeService.PodSandboxStats
import type { cri } from '@skiff/proto';
import { refreshContainer } from '../container/container-state.js';
import type { RuntimeContext } from '../daemon/context.js';
import { requireSandbox } from '../sandbox/require-sandbox.js';
import type { StatsCollector } from '../stats/stats-collector.js';

export async function podSandboxStatsCall(ctx: RuntimeContext, stats: StatsCollector, request: cri.PodSandboxStatsRequest__Output): Promise<cri.PodSandboxStatsResponse> {
  const rec = requireSandbox(ctx, request.pod_sandbox_id);
  const containers = ctx.state.containersOf(rec.id);
  for (const c of containers) await refreshContainer(ctx, c);
  return { stats: await stats.podStats(rec, containers) };
}
