import { status, type ServerWritableStream, type sendUnaryData } from '@grpc/grpc-js';
import { batchedStreamCall, unaryCall, type Logger } from '@skiff/common';
import type { cri } from '@skiff/proto';
import type { RuntimeContext } from './daemon/context.js';
import { toStatusError } from './errors.js';
import { containerStatus, listContainers } from './handlers/container-query.js';
import { createContainerCall, removeContainerCall, startContainerCall, stopContainerCall } from './handlers/container-lifecycle.js';
import { reopenContainerLog, updateContainerResources } from './handlers/container-update.js';
import { execSyncCall } from './handlers/exec-sync.js';
import { attachCall, execCall, portForwardCall } from './handlers/streaming.js';
import { listPodSandbox, podSandboxStatus, updatePodSandboxResources } from './handlers/pod-sandbox-query.js';
import { removePodSandboxCall, runPodSandboxCall, stopPodSandboxCall } from './handlers/pod-sandbox-lifecycle.js';
import { runtimeConfig, runtimeStatus, updateRuntimeConfig, version } from './handlers/runtime-info.js';
import { containerStatsCall, listContainerStats, listPodSandboxStats, podSandboxStatsCall } from './handlers/stats.js';
import { StatsCollector } from './stats/stats-collector.js';

function unary<Req, Res>(log: Logger, method: string, handler: (request: Req, signal: AbortSignal) => Promise<Res> | Res) {
  return unaryCall(log, method, toStatusError, handler);
}

function batched<Req, Res, Item>(log: Logger, method: string, list: (request: Req) => Promise<Item[]>, wrap: (items: Item[]) => Res) {
  return batchedStreamCall(log, method, toStatusError, list, wrap);
}

function unimplemented(what: string) {
  return (_call: unknown, callback: sendUnaryData<never>): void => {
    callback({ code: status.UNIMPLEMENTED, details: `${what} is not supported by this runtime` });
  };
}

function unimplementedStream(what: string) {
  return (call: ServerWritableStream<unknown, unknown>): void => {
    call.destroy(Object.assign(new Error(`${what} is not supported by this runtime`), { code: status.UNIMPLEMENTED }));
  };
}

export function runtimeServiceHandlers(ctx: RuntimeContext): cri.RuntimeServiceHandlers {
  const log = ctx.log;
  const stats = new StatsCollector(ctx);
  return {
    Version: unary(log, 'Version', () => version(ctx)),
    Status: unary(log, 'Status', (req: cri.StatusRequest__Output) => runtimeStatus(ctx, req)),
    RuntimeConfig: unary(log, 'RuntimeConfig', () => runtimeConfig(ctx)),
    UpdateRuntimeConfig: unary(log, 'UpdateRuntimeConfig', (req: cri.UpdateRuntimeConfigRequest__Output) => updateRuntimeConfig(ctx, req)),

    RunPodSandbox: unary(log, 'RunPodSandbox', (req: cri.RunPodSandboxRequest__Output) => runPodSandboxCall(ctx, req)),
    StopPodSandbox: unary(log, 'StopPodSandbox', (req: cri.StopPodSandboxRequest__Output) => stopPodSandboxCall(ctx, req)),
    RemovePodSandbox: unary(log, 'RemovePodSandbox', async (req: cri.RemovePodSandboxRequest__Output) => {
      const response = await removePodSandboxCall(ctx, req);
      stats.forget(req.pod_sandbox_id);
      return response;
    }),
    PodSandboxStatus: unary(log, 'PodSandboxStatus', (req: cri.PodSandboxStatusRequest__Output) => podSandboxStatus(ctx, req)),
    ListPodSandbox: unary(log, 'ListPodSandbox', (req: cri.ListPodSandboxRequest__Output) => listPodSandbox(ctx, req)),
    StreamPodSandboxes: batched(
      log,
      'StreamPodSandboxes',
      async (req: cri.StreamPodSandboxesRequest__Output) => (await listPodSandbox(ctx, { filter: req.filter })).items ?? [],
      (pod_sandboxes): cri.StreamPodSandboxesResponse => ({ pod_sandboxes }),
    ),
    UpdatePodSandboxResources: unary(log, 'UpdatePodSandboxResources', (req: cri.UpdatePodSandboxResourcesRequest__Output) => updatePodSandboxResources(ctx, req)),

    CreateContainer: unary(log, 'CreateContainer', (req: cri.CreateContainerRequest__Output) => createContainerCall(ctx, req)),
    StartContainer: unary(log, 'StartContainer', (req: cri.StartContainerRequest__Output) => startContainerCall(ctx, req)),
    StopContainer: unary(log, 'StopContainer', (req: cri.StopContainerRequest__Output) => stopContainerCall(ctx, req)),
    RemoveContainer: unary(log, 'RemoveContainer', async (req: cri.RemoveContainerRequest__Output) => {
      const response = await removeContainerCall(ctx, req);
      stats.forget(req.container_id);
      return response;
    }),
    ContainerStatus: unary(log, 'ContainerStatus', (req: cri.ContainerStatusRequest__Output) => containerStatus(ctx, req)),
    ListContainers: unary(log, 'ListContainers', (req: cri.ListContainersRequest__Output) => listContainers(ctx, req)),
    StreamContainers: batched(
      log,
      'StreamContainers',
      async (req: cri.StreamContainersRequest__Output) => (await listContainers(ctx, { filter: req.filter })).containers ?? [],
      (containers): cri.StreamContainersResponse => ({ containers }),
    ),
    UpdateContainerResources: unary(log, 'UpdateContainerResources', (req: cri.UpdateContainerResourcesRequest__Output) => updateContainerResources(ctx, req)),
    ReopenContainerLog: unary(log, 'ReopenContainerLog', (req: cri.ReopenContainerLogRequest__Output) => reopenContainerLog(ctx, req)),
    ExecSync: unary(log, 'ExecSync', (req: cri.ExecSyncRequest__Output) => execSyncCall(ctx, req)),

    ContainerStats: unary(log, 'ContainerStats', (req: cri.ContainerStatsRequest__Output) => containerStatsCall(ctx, stats, req)),
    ListContainerStats: unary(log, 'ListContainerStats', (req: cri.ListContainerStatsRequest__Output) => listContainerStats(ctx, stats, req)),
    StreamContainerStats: batched(
      log,
      'StreamContainerStats',
      async (req: cri.StreamContainerStatsRequest__Output) => (await listContainerStats(ctx, stats, { filter: req.filter })).stats ?? [],
      (container_stats): cri.StreamContainerStatsResponse => ({ container_stats }),
    ),
    PodSandboxStats: unary(log, 'PodSandboxStats', (req: cri.PodSandboxStatsRequest__Output) => podSandboxStatsCall(ctx, stats, req)),
    ListPodSandboxStats: unary(log, 'ListPodSandboxStats', (req: cri.ListPodSandboxStatsRequest__Output) => listPodSandboxStats(ctx, stats, req)),
    StreamPodSandboxStats: batched(
      log,
      'StreamPodSandboxStats',
      async (req: cri.StreamPodSandboxStatsRequest__Output) => (await listPodSandboxStats(ctx, stats, { filter: req.filter })).stats ?? [],
      (pod_sandbox_stats): cri.StreamPodSandboxStatsResponse => ({ pod_sandbox_stats }),
    ),

    Exec: unary(log, 'Exec', (req: cri.ExecRequest__Output) => execCall(ctx, req)),
    Attach: unary(log, 'Attach', (req: cri.AttachRequest__Output) => attachCall(ctx, req)),
    PortForward: unary(log, 'PortForward', (req: cri.PortForwardRequest__Output) => portForwardCall(ctx, req)),
    CheckpointContainer: unimplemented('CheckpointContainer'),
    CheckpointPod: unimplemented('CheckpointPod'),
    RestorePod: unimplemented('RestorePod'),
    GetContainerEvents: unimplementedStream('GetContainerEvents'),
    ListMetricDescriptors: unimplemented('ListMetricDescriptors'),
    ListPodSandboxMetrics: unimplemented('ListPodSandboxMetrics'),
    StreamPodSandboxMetrics: unimplementedStream('StreamPodSandboxMetrics'),
  };
}
