import { stopContainerLocked } from '../container/container-stop-locked.js';
import type { RuntimeContext } from '../daemon/context.js';
import { unmountIfMounted } from '../mounts/mounts.js';
import type { SandboxRecord } from '../state/records.js';
import { allSettledOrThrow } from '../util/settle.js';
import { StepTimer } from '@skiff/common';
import { stopSandboxContainer } from './sandbox-container.js';
import { detachSandboxNetwork } from './sandbox-network.js';

/** How long catatonit gets to exit on SIGTERM before it is killed. */
const SANDBOX_STOP_GRACE_MS = 10_000;

/**
 * The part of stopping that concerns the sandbox itself: catatonit, the network, the namespaces
 * and /dev/shm. Each step tolerates its object being gone, so it can run again after a failure.
 */
async function releaseSandboxRuntime(ctx: RuntimeContext, rec: SandboxRecord, timer: StepTimer): Promise<void> {
  await stopSandboxContainer(ctx, rec, SANDBOX_STOP_GRACE_MS);
  timer.mark('stop pause');
  await detachSandboxNetwork(ctx, rec);
  timer.mark('CNI DEL');
  await ctx.netns.remove(rec.id);
  timer.mark('netns');
  // No namespace path left means nothing left to detach: later stops and the removal skip CNI.
  rec.netnsPath = undefined;
  const paths = ctx.paths.sandbox(rec.id);
  await unmountIfMounted(paths.shm);
  // Its last holder once the pause and the network namespace are gone.
  await unmountIfMounted(paths.userns);
  timer.mark('shm and user namespace');
}

/** StopPodSandbox with the sandbox's lock held: every container killed, then the sandbox's own resources. */
export async function stopPodSandboxLocked(ctx: RuntimeContext, rec: SandboxRecord): Promise<void> {
  const timer = new StepTimer(ctx.log, 'sandbox stop', { sandbox: rec.id });
  // Each container's stop waits for its exit and its last log lines: all at once, not one by one.
  await allSettledOrThrow(
    ctx.state.containersOf(rec.id).map((container) =>
      ctx.locks.run(container.id, async () => {
        if (ctx.state.containers.get(container.id) === container) await stopContainerLocked(ctx, container, 0);
      }),
    ),
  );
  timer.mark('containers');
  const wasStopped = rec.phase === 'stopped';
  await releaseSandboxRuntime(ctx, rec, timer);
  rec.phase = 'stopped';
  rec.ips = [];
  await ctx.records.saveSandbox(rec);
  timer.mark('record');
  timer.done();
  if (!wasStopped) {
    ctx.events.sandbox(rec, 'CONTAINER_STOPPED_EVENT');
    ctx.log.info({ sandbox: rec.id }, 'pod sandbox stopped');
  }
}
