// CRI RuntimeService.UpdateContainerResources
import type { cri } from '@skiff/proto';
import { refreshContainer } from '../container/container-state.js';
import { requireContainer, withContainerLock } from '../container/require-container.js';
import { updateResourcesLocked } from '../container/update-resources-locked.js';
import type { RuntimeContext } from '../daemon/context.js';

/** New cgroup limits for a container, applied as far as its state allows (see updateResourcesLocked). */
export async function updateContainerResourcesCall(ctx: RuntimeContext, request: cri.UpdateContainerResourcesRequest__Output): Promise<cri.UpdateContainerResourcesResponse> {
  const rec = requireContainer(ctx, 'UpdateContainerResources', request.container_id);
  await withContainerLock(ctx, rec, async () => {
    const wanted = request.linux;
    if (!wanted) {
      await refreshContainer(ctx, rec);
      return;
    }
    await updateResourcesLocked(ctx, rec, wanted);
  });
  return {};
}
