// CRI RuntimeService.UpdatePodSandboxResources
import type { cri } from '@skiff/proto';
import { resourcesOf } from '../container/container-spec.js';
import type { RuntimeContext } from '../daemon/context.js';
import { nriLinuxResources } from '../nri/nri-messages.js';
import { resourceLimits } from '../oci/spec-builder.js';
import { requireSandbox } from '../sandbox/require-sandbox.js';

/**
 * The kubelet has already resized the pod's cgroup; nothing of ours depends on the figures. NRI
 * plugins are told (UpdatePodSandbox, then PostUpdatePodSandbox).
 */
export async function updatePodSandboxResourcesCall(ctx: RuntimeContext, request: cri.UpdatePodSandboxResourcesRequest__Output): Promise<cri.UpdatePodSandboxResourcesResponse> {
  const sandbox = requireSandbox(ctx, request.pod_sandbox_id);
  if (ctx.nri?.active) {
    const asNri = (r: cri.LinuxContainerResources__Output | null) => nriLinuxResources(resourceLimits(resourcesOf(r) ?? {}, ctx.facts));
    await ctx.nri.notifyPod('UpdatePodSandbox', sandbox, { resources: asNri(request.resources), overhead: asNri(request.overhead) });
    await ctx.nri.notifyPod('PostUpdatePodSandbox', sandbox);
  }
  return {};
}
