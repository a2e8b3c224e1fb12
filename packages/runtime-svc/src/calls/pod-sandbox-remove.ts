// CRI RuntimeService.RemovePodSandbox
import type { cri } from '@skiff/proto';
import type { RuntimeContext } from '../daemon/context.js';
import { withExistingSandbox } from '../sandbox/require-sandbox.js';
import { removePodSandboxLocked } from '../sandbox/sandbox-remove-locked.js';

/** Idempotent: removing a removed or unknown sandbox succeeds. */
export async function removePodSandboxCall(ctx: RuntimeContext, request: cri.RemovePodSandboxRequest__Output): Promise<cri.RemovePodSandboxResponse> {
  await withExistingSandbox(ctx, 'RemovePodSandbox', request.pod_sandbox_id, async (rec) => {
    await removePodSandboxLocked(ctx, rec);
    if (ctx.nri?.active) await ctx.nri.notifyPod('RemovePodSandbox', rec);
  });
  return {};
}
