import { listMetricDescriptorsCall } from './calls/metric-descriptors-list.js';
import { listPodSandboxMetricsCall } from './calls/pod-sandbox-metrics-list.js';
import { streamPodSandboxMetricsCall } from './calls/pod-sandbox-metrics-stream.js';
import { getContainerEventsCall } from './calls/container-events-get.js';
import { batchedStreamCall, unaryCall, type Logger } from '@skiff/common';
import type { cri } from '@skiff/proto';
import { attachCall } from './calls/attach.js';
import { createContainerCall } from './calls/container-create.js';
import { listContainersCall, streamContainersCall } from './calls/container-list.js';
import { reopenContainerLogCall } from './calls/container-log-reopen.js';
import { removeContainerCall } from './calls/container-remove.js';
import { startContainerCall } from './calls/container-start.js';
import { containerStatsCall } from './calls/container-stats.js';
import { listContainerStatsCall, streamContainerStatsCall } from './calls/container-stats-list.js';
import { containerStatusCall } from './calls/container-status.js';
import { stopContainerCall } from './calls/container-stop.js';
import { updateContainerResourcesCall } from './calls/container-update-resources.js';
import { execCall } from './calls/exec.js';
import { execSyncCall } from './calls/exec-sync.js';
import { notImplemented } from './calls/not-implemented.js';
import { listPodSandboxCall, streamPodSandboxesCall } from './calls/pod-sandbox-list.js';
import { removePodSandboxCall } from './calls/pod-sandbox-remove.js';
import { runPodSandboxCall } from './calls/pod-sandbox-run.js';
import { podSandboxStatsCall } from './calls/pod-sandbox-stats.js';
import { listPodSandboxStatsCall, streamPodSandboxStatsCall } from './calls/pod-sandbox-stats-list.js';
import { podSandboxStatusCall } from './calls/pod-sandbox-status.js';
import { stopPodSandboxCall } from './calls/pod-sandbox-stop.js';
import { updatePodSandboxResourcesCall } from './calls/pod-sandbox-update-resources.js';
import { portForwardCall } from './calls/port-forward.js';
import { runtimeConfigCall } from './calls/runtime-config.js';
import { updateRuntimeConfigCall } from './calls/runtime-config-update.js';
import { runtimeStatusCall } from './calls/runtime-status.js';
import { versionCall } from './calls/version.js';
import type { RuntimeContext } from './daemon/context.js';
import { toStatusError } from './errors.js';
import { StatsCollector } from './stats/stats-collector.js';

function unary<Req, Res>(log: Logger, method: string, implementation: (request: Req, signal: AbortSignal) => Promise<Res> | Res) {
  return unaryCall(log, method, toStatusError, implementation);
}

function batched<Req, Res, Item>(log: Logger, method: string, list: (request: Req) => Promise<Item[]>, wrap: (items: Item[]) => Res) {
  return batchedStreamCall(log, method, toStatusError, list, wrap);
}

/** The CRI RuntimeService: each call wired to its implementation in calls/, one file per call. */
export function runtimeService(ctx: RuntimeContext): cri.RuntimeServiceHandlers {
  const log = ctx.log;
  const stats = new StatsCollector(ctx);
  return {
    Version: unary(log, 'Version', () => versionCall(ctx)),
    Status: unary(log, 'Status', (req: cri.StatusRequest__Output) => runtimeStatusCall(ctx, req)),
    RuntimeConfig: unary(log, 'RuntimeConfig', () => runtimeConfigCall(ctx)),
    UpdateRuntimeConfig: unary(log, 'UpdateRuntimeConfig', (req: cri.UpdateRuntimeConfigRequest__Output) => updateRuntimeConfigCall(ctx, req)),

    RunPodSandbox: unary(log, 'RunPodSandbox', (req: cri.RunPodSandboxRequest__Output, signal: AbortSignal) => runPodSandboxCall(ctx, req, signal)),
    StopPodSandbox: unary(log, 'StopPodSandbox', (req: cri.StopPodSandboxRequest__Output) => stopPodSandboxCall(ctx, req)),
    RemovePodSandbox: unary(log, 'RemovePodSandbox', async (req: cri.RemovePodSandboxRequest__Output) => {
      const response = await removePodSandboxCall(ctx, req);
      stats.forget(req.pod_sandbox_id);
      return response;
    }),
    PodSandboxStatus: unary(log, 'PodSandboxStatus', (req: cri.PodSandboxStatusRequest__Output) => podSandboxStatusCall(ctx, req)),
    ListPodSandbox: unary(log, 'ListPodSandbox', (req: cri.ListPodSandboxRequest__Output) => listPodSandboxCall(ctx, req)),
    StreamPodSandboxes: batched(
      log,
      'StreamPodSandboxes',
      (req: cri.StreamPodSandboxesRequest__Output) => streamPodSandboxesCall(ctx, req),
      (pod_sandboxes): cri.StreamPodSandboxesResponse => ({ pod_sandboxes }),
    ),
    UpdatePodSandboxResources: unary(log, 'UpdatePodSandboxResources', (req: cri.UpdatePodSandboxResourcesRequest__Output) => updatePodSandboxResourcesCall(ctx, req)),

    CreateContainer: unary(log, 'CreateContainer', (req: cri.CreateContainerRequest__Output, signal: AbortSignal) => createContainerCall(ctx, req, signal)),
    StartContainer: unary(log, 'StartContainer', (req: cri.StartContainerRequest__Output, signal: AbortSignal) => startContainerCall(ctx, req, signal)),
    StopContainer: unary(log, 'StopContainer', (req: cri.StopContainerRequest__Output) => stopContainerCall(ctx, req)),
    RemoveContainer: unary(log, 'RemoveContainer', async (req: cri.RemoveContainerRequest__Output) => {
      const response = await removeContainerCall(ctx, req);
      stats.forget(req.container_id);
      return response;
    }),
    ContainerStatus: unary(log, 'ContainerStatus', (req: cri.ContainerStatusRequest__Output) => containerStatusCall(ctx, req)),
    ListContainers: unary(log, 'ListContainers', (req: cri.ListContainersRequest__Output) => listContainersCall(ctx, req)),
    StreamContainers: batched(
      log,
      'StreamContainers',
      (req: cri.StreamContainersRequest__Output) => streamContainersCall(ctx, req),
      (containers): cri.StreamContainersResponse => ({ containers }),
    ),
    UpdateContainerResources: unary(log, 'UpdateContainerResources', async (req: cri.UpdateContainerResourcesRequest__Output) => {
      try {
        return await updateContainerResourcesCall(ctx, req);
      } finally {
        stats.resourcesChanged(req.container_id);
      }
    }),
    ReopenContainerLog: unary(log, 'ReopenContainerLog', (req: cri.ReopenContainerLogRequest__Output) => reopenContainerLogCall(ctx, req)),
    ExecSync: unary(log, 'ExecSync', (req: cri.ExecSyncRequest__Output, signal: AbortSignal) => execSyncCall(ctx, req, signal)),

    ContainerStats: unary(log, 'ContainerStats', (req: cri.ContainerStatsRequest__Output) => containerStatsCall(ctx, stats, req)),
    ListContainerStats: unary(log, 'ListContainerStats', (req: cri.ListContainerStatsRequest__Output) => listContainerStatsCall(ctx, stats, req)),
    StreamContainerStats: batched(
      log,
      'StreamContainerStats',
      (req: cri.StreamContainerStatsRequest__Output) => streamContainerStatsCall(ctx, stats, req),
      (container_stats): cri.StreamContainerStatsResponse => ({ container_stats }),
    ),
    PodSandboxStats: unary(log, 'PodSandboxStats', (req: cri.PodSandboxStatsRequest__Output) => podSandboxStatsCall(ctx, stats, req)),
    ListPodSandboxStats: unary(log, 'ListPodSandboxStats', (req: cri.ListPodSandboxStatsRequest__Output) => listPodSandboxStatsCall(ctx, stats, req)),
    StreamPodSandboxStats: batched(
      log,
      'StreamPodSandboxStats',
      (req: cri.StreamPodSandboxStatsRequest__Output) => streamPodSandboxStatsCall(ctx, stats, req),
      (pod_sandbox_stats): cri.StreamPodSandboxStatsResponse => ({ pod_sandbox_stats }),
    ),

    Exec: unary(log, 'Exec', (req: cri.ExecRequest__Output) => execCall(ctx, req)),
    Attach: unary(log, 'Attach', (req: cri.AttachRequest__Output) => attachCall(ctx, req)),
    PortForward: unary(log, 'PortForward', (req: cri.PortForwardRequest__Output) => portForwardCall(ctx, req)),
    CheckpointContainer: notImplemented('CheckpointContainer'),
    CheckpointPod: notImplemented('CheckpointPod'),
    RestorePod: notImplemented('RestorePod'),
    GetContainerEvents: getContainerEventsCall(ctx, log),
    ListMetricDescriptors: unary(log, 'ListMetricDescriptors', () => listMetricDescriptorsCall()),
    ListPodSandboxMetrics: unary(log, 'ListPodSandboxMetrics', () => listPodSandboxMetricsCall(ctx, stats)),
    StreamPodSandboxMetrics: batched(
      log,
      'StreamPodSandboxMetrics',
      () => streamPodSandboxMetricsCall(ctx, stats),
      (pod_sandbox_metrics): cri.StreamPodSandboxMetricsResponse => ({ pod_sandbox_metrics }),
    ),
  };
}
