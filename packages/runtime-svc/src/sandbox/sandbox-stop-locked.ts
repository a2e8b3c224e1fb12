import { stopContainerLocked } from '../container/container-stop-locked.js';
import type { RuntimeContext } from '../daemon/context.js';
import { unmountIfMounted } from '../mounts/mounts.js';
import type { SandboxRecord } from '../state/records.js';
import { allSettledOrThrow } from '../util/settle.js';
import { StepTimer } from '@skiff/common';
import { stopSandboxContainer } from './sandbox-container.js';
import { unpinPodNamespaces } from './pod-namespaces.js';
import { detachSandboxNetwork } from './sandbox-network.js';

/** How long catatonit gets to exit on SIGTERM before it is killed. */
const SANDBOX_STOP_GRACE_MS = 10_000;

/** Every container of the sandbox killed, each waiting for its exit and its last log lines: all at once. */
function stopContainers(ctx: RuntimeContext, rec: SandboxRecord): Promise<unknown> {
  return allSettledOrThrow(
    ctx.state.containersOf(rec.id).map((container) =>
      ctx.locks.run(container.id, async () => {
        if (ctx.state.containers.get(container.id) === container) await stopContainerLocked(ctx, container, 0);
      }),
    ),
  );
}

/**
 * The namespaces (the network namespace, the user namespace and the pinned IPC, UTS and PID
 * ones) and /dev/shm, once the network is detached and the pause process is gone. The
 * mounts are only the runtime's references (a namespace lives while anything holds it), so they
 * go at the same time.
 */
async function releaseNamespaces(ctx: RuntimeContext, rec: SandboxRecord): Promise<void> {
  const paths = ctx.paths.sandbox(rec.id);
  await allSettledOrThrow([ctx.netns.remove(rec.id), unmountIfMounted(paths.shm), unmountIfMounted(paths.userns), unpinPodNamespaces(paths)]);
  // No namespace path left means nothing left to detach: later stops and the removal skip CNI.
  rec.netnsPath = undefined;
}

/** The record as a stopped sandbox's: no addresses, no namespace left to detach. */
function saveStopped(ctx: RuntimeContext, rec: SandboxRecord): Promise<void> {
  rec.phase = 'stopped';
  rec.ips = [];
  rec.netnsPath = undefined;
  return ctx.records.saveSandbox(rec);
}

/**
 * StopPodSandbox with the sandbox's lock held: every container killed, the pause process stopped
 * and the network detached, then the namespaces released. Each step tolerates its object being
 * gone, so it can run again after a failure. A sandbox already stopped has its network detached;
 * a namespace mount left by a failed release goes on a later stop, or with the sandbox.
 */
export async function stopPodSandboxLocked(ctx: RuntimeContext, rec: SandboxRecord): Promise<void> {
  const timer = new StepTimer(ctx.log, 'sandbox stop', { sandbox: rec.id });
  const wasStopped = rec.phase === 'stopped';
  if (wasStopped) {
    // Its network is detached; a namespace mount whose release failed is tried again.
    await stopContainers(ctx, rec);
    timer.mark('containers');
    await releaseNamespaces(ctx, rec);
    timer.mark('netns, shm and user namespace');
  } else if (ctx.handlers.forExisting(rec.runtimeHandler).kind === 'sandbox') {
    // A gVisor sandbox is the pause: its containers are stopped through it, so before it.
    await stopContainers(ctx, rec);
    timer.mark('containers');
    await stopSandboxContainer(ctx, rec, SANDBOX_STOP_GRACE_MS);
    timer.mark('stop pause');
    await detachSandboxNetwork(ctx, rec);
    timer.mark('CNI DEL');
    await releaseNamespaces(ctx, rec);
    timer.mark('netns, shm and user namespace');
  } else {
    // The containers are killed at once (no grace period), so nothing in the pod needs its
    // network or its pause process any longer: all three go at the same time, and /dev/shm as
    // soon as the processes are gone. The network namespace stays mounted (CNI DEL reads it)
    // until CNI DEL is done.
    const paths = ctx.paths.sandbox(rec.id);
    const processes = allSettledOrThrow([timer.time('containers', stopContainers(ctx, rec)), timer.time('stop pause', stopSandboxContainer(ctx, rec, SANDBOX_STOP_GRACE_MS))]);
    await allSettledOrThrow([
      timer.time('processes and shm', processes.then(() => unmountIfMounted(paths.shm))),
      timer.time('CNI DEL', detachSandboxNetwork(ctx, rec)),
    ]);
    timer.mark('containers, pause, shm and CNI DEL');
    // Nothing is left that only this call could release: the record says stopped while the
    // namespace mounts go (a removal, or recovery after a crash, removes them by id).
    await allSettledOrThrow([releaseNamespaces(ctx, rec), saveStopped(ctx, rec)]);
    timer.mark('netns, user namespace and record');
  }
  if (rec.phase !== 'stopped') {
    await saveStopped(ctx, rec);
    timer.mark('record');
  }
  timer.done();
  if (!wasStopped) {
    ctx.events.sandbox(rec, 'CONTAINER_STOPPED_EVENT');
    ctx.log.info({ sandbox: rec.id }, 'pod sandbox stopped');
  }
}
