// CRI RuntimeService.RemoveContainer
import type { cri } from '@skiff/proto';
import { removeContainerLocked } from '../container/container-remove-locked.js';
import { withExistingContainer } from '../container/require-container.js';
import type { RuntimeContext } from '../daemon/context.js';

/** Idempotent: removing a removed or unknown container succeeds; a running one is killed first. */
export async function removeContainerCall(ctx: RuntimeContext, request: cri.RemoveContainerRequest__Output): Promise<cri.RemoveContainerResponse> {
  await withExistingContainer(ctx, 'RemoveContainer', request.container_id, async (rec) => {
    await removeContainerLocked(ctx, rec);
    const sandbox = ctx.state.sandboxes.get(rec.sandboxId);
    if (sandbox && ctx.nri?.active) await ctx.nri.notifyContainer('RemoveContainer', sandbox, rec);
  });
  return {};
}
