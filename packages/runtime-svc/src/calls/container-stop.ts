// CRI RuntimeService.StopContainer
import type { cri } from '@skiff/proto';
import { stopContainerLocked } from '../container/container-stop-locked.js';
import { withExistingContainer } from '../container/require-container.js';
import type { RuntimeContext } from '../daemon/context.js';

/** Idempotent: stopping an exited or unknown container succeeds. */
export async function stopContainerCall(ctx: RuntimeContext, request: cri.StopContainerRequest__Output): Promise<cri.StopContainerResponse> {
  // NRI plugins hear of the stop as the exit is recorded (refreshContainer).
  await withExistingContainer(ctx, 'StopContainer', request.container_id, (rec) => stopContainerLocked(ctx, rec, Number(request.timeout)));
  return {};
}
