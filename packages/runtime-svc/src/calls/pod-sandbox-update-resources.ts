// CRI RuntimeService.UpdatePodSandboxResources
import type { cri } from '@skiff/proto';
import type { RuntimeContext } from '../daemon/context.js';
import { requireSandbox } from '../sandbox/require-sandbox.js';

/** The kubelet has already resized the pod's cgroup; nothing of ours depends on the figures. */
export async function updatePodSandboxResourcesCall(ctx: RuntimeContext, request: cri.UpdatePodSandboxResourcesRequest__Output): Promise<cri.UpdatePodSandboxResourcesResponse> {
  requireSandbox(ctx, request.pod_sandbox_id);
  return {};
}
