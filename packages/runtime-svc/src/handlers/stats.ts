import type { cri } from '@skiff/proto';
import { requireContainer } from '../container/require-container.js';
import { refreshContainer } from '../container/container-state.js';
import type { RuntimeContext } from '../daemon/context.js';
import { requireSandbox } from '../sandbox/sandbox-lifecycle.js';
import type { StatsCollector } from '../stats/stats-collector.js';
import { filterContainers } from './container-query.js';
import { filterSandboxes } from './pod-sandbox-query.js';

export async function containerStatsCall(ctx: RuntimeContext, stats: StatsCollector, request: cri.ContainerStatsRequest__Output): Promise<cri.ContainerStatsResponse> {
  const rec = await refreshContainer(ctx, requireContainer(ctx, 'ContainerStats', request.container_id));
  return { stats: await stats.containerStats(rec) };
}

export async function listContainerStats(ctx: RuntimeContext, stats: StatsCollector, request: cri.ListContainerStatsRequest__Output): Promise<cri.ListContainerStatsResponse> {
  const containers = await filterContainers(ctx, request.filter);
  return { stats: await Promise.all(containers.map((c) => stats.containerStats(c))) };
}

export async function podSandboxStatsCall(ctx: RuntimeContext, stats: StatsCollector, request: cri.PodSandboxStatsRequest__Output): Promise<cri.PodSandboxStatsResponse> {
  const rec = requireSandbox(ctx, request.pod_sandbox_id);
  const containers = ctx.state.containersOf(rec.id);
  for (const c of containers) await refreshContainer(ctx, c);
  return { stats: await stats.podStats(rec, containers) };
}

export async function listPodSandboxStats(ctx: RuntimeContext, stats: StatsCollector, request: cri.ListPodSandboxStatsRequest__Output): Promise<cri.ListPodSandboxStatsResponse> {
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
