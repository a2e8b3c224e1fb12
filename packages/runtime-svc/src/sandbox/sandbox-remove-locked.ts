import { removeContainerLocked } from '../container/container-remove-locked.js';
import type { RuntimeContext } from '../daemon/context.js';
import type { SandboxRecord } from '../state/records.js';
import { podNameKey } from '../state/state-index.js';
import { allSettledOrThrow } from '../util/settle.js';
import { StepTimer } from '@skiff/common';
import { stopPodSandboxLocked } from './sandbox-stop-locked.js';
import { teardownSandbox } from './sandbox-teardown.js';

/**
 * RemovePodSandbox with the sandbox's lock held: stop, remove every container, then the sandbox.
 * As with a container, the removal is answered once every record says "removing" on disk and
 * the sandbox is out of the state; its teardown follows in the background, after its containers'
 * (start-up recovery finishes both after a crash).
 */
export async function removePodSandboxLocked(ctx: RuntimeContext, rec: SandboxRecord): Promise<void> {
  const timer = new StepTimer(ctx.log, 'sandbox removal', { sandbox: rec.id });
  if (rec.phase !== 'removing') await stopPodSandboxLocked(ctx, rec);
  timer.mark('stop');
  await allSettledOrThrow(
    ctx.state.containersOf(rec.id).map((container) =>
      ctx.locks.run(container.id, async () => {
        if (ctx.state.containers.get(container.id) === container) await removeContainerLocked(ctx, container);
      }),
    ),
  );
  timer.mark('containers');
  await ctx.records.markSandboxRemoving(rec);
  timer.mark('record');
  timer.done();
  ctx.state.sandboxes.delete(rec.id);
  ctx.state.podNames.release(podNameKey(rec.metadata), rec.id);
  ctx.events.sandbox(rec, 'CONTAINER_DELETED_EVENT');
  ctx.log.info({ sandbox: rec.id }, 'pod sandbox removed');
  ctx.cleanups.start(rec.id, rec.id, `pod sandbox ${rec.id}`, async () => {
    await ctx.cleanups.containersOf(rec.id);
    const cleanup = new StepTimer(ctx.log, 'sandbox cleanup', { sandbox: rec.id });
    await teardownSandbox(ctx, rec, cleanup);
    cleanup.done();
  });
}
