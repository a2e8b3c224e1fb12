import { directSignals, stopContainer } from '../oci/stop-container.js';
import type { RuntimeContext } from '../daemon/context.js';
import type { ContainerRecord } from '../state/records.js';
import { StepTimer } from '@skiff/common';
import { exitReason, markExited, refreshContainer } from './container-state.js';
import { killHolder } from './sandboxed-start.js';

/** The exit code a container stopped before StartContainer is given: as if killed (128 + SIGKILL). */
export const NEVER_STARTED_EXIT_CODE = 137;

/**
 * Stops a container (the caller holds its lock): the stop signal, SIGKILL once `timeoutSeconds`
 * have passed. A container that was created but never started has no process: it becomes exited
 * at once. Stopping one that has already exited does nothing.
 */
export async function stopContainerLocked(ctx: RuntimeContext, rec: ContainerRecord, timeoutSeconds: number): Promise<void> {
  const timer = new StepTimer(ctx.log, 'container stop', { container: rec.id });
  await refreshContainer(ctx, rec);
  if (rec.phase !== 'created' && rec.phase !== 'running') return;
  timer.mark('refresh');
  if (rec.phase === 'created' && rec.pid === undefined) {
    await stopNeverStarted(ctx, rec);
    timer.done();
    return;
  }
  const handler = ctx.handlers.forExisting(rec.runtimeHandler);
  // A created container's process is still runc's, waiting to exec the command: it has printed
  // nothing, so its exit needs no wait for the log.
  const neverRan = rec.phase === 'created';
  const timeoutMs = neverRan ? 0 : Math.max(0, timeoutSeconds) * 1000;
  // runsc cannot signal a container it has not started: its holder's end is the container's.
  if (neverRan && handler.kind === 'sandbox') await killHolder(rec.id, ctx.paths.container(rec.id).pidFile);
  await stopContainer(handler.runc, rec.id, {
    exitDir: ctx.paths.exitDir,
    timeoutMs,
    signal: rec.stopSignal,
    exitFileAppeared: ctx.exitWatch.nextExitFile,
    ...directSignals(handler.kind, rec, rec.ownPidNamespace === true),
  });
  timer.mark('signal and wait for exit');
  await refreshContainer(ctx, rec, { neverRan });
  timer.mark('refresh after exit');
  timer.done();
}

async function stopNeverStarted(ctx: RuntimeContext, rec: ContainerRecord): Promise<void> {
  markExited(rec, NEVER_STARTED_EXIT_CODE, exitReason(NEVER_STARTED_EXIT_CODE, false), 'stopped before it was started');
  await ctx.records.saveContainer(rec);
  ctx.events.container(rec, 'CONTAINER_STOPPED_EVENT');
}
