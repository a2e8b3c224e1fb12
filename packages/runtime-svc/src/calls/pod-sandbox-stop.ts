// CRI RuntimeService.StopPodSandbox
import type { cri } from '@skiff/proto';
import type { RuntimeContext } from '../daemon/context.js';
import { withExistingSandbox } from '../sandbox/require-sandbox.js';
import { stopPodSandboxLocked } from '../sandbox/sandbox-stop-locked.js';

/** Idempotent: stopping a stopped or unknown sandbox succeeds. */
export async function stopPodSandboxCall(ctx: RuntimeContext, request: cri.StopPodSandboxRequest__Output): Promise<cri.StopPodSandboxResponse> {
  await withExistingSandbox(ctx, 'StopPodSandbox', request.pod_sandbox_id, async (rec) => {
    const wasReady = rec.phase === 'ready';
    await stopPodSandboxLocked(ctx, rec);
    if (wasReady && ctx.nri?.active) await ctx.nri.notifyPod('StopPodSandbox', rec);
  });
  return {};
}
