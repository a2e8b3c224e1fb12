import { errorMessage } from '@skiff/common';
import { startContainerCall } from '../calls/container-start.js';
import type { RuntimeContext } from '../daemon/context.js';

/**
 * Starts the containers whose StartContainer a killed runtime-svc had begun (recovery left them
 * created), before the socket takes calls: the kubelet, whose StartContainer failed with the
 * connection, finds each running (or exited with StartError, if its start fails now) at its next
 * look. NRI plugins, not connected yet, learn of them when they synchronize.
 */
export async function finishInterruptedStarts(ctx: RuntimeContext, ids: string[]): Promise<void> {
  await Promise.all(
    ids.map(async (id) => {
      try {
        await startContainerCall(ctx, { container_id: id });
        ctx.log.info({ container: id }, 'recovery: finished a StartContainer that runtime-svc was killed in');
      } catch (err) {
        ctx.log.warn({ container: id, err: errorMessage(err) }, 'recovery: a StartContainer that runtime-svc was killed in could not be finished');
      }
    }),
  );
}
