import type { RuntimeContext } from '../daemon/context.js';
import { forgetContainerLog } from '../logs/logs-client.js';
import type { ContainerRecord } from '../state/records.js';
import { StepTimer } from '@skiff/common';
import { stopContainerLocked } from './container-stop-locked.js';
import { teardownContainer } from './container-teardown.js';

/**
 * Removes a container (the caller holds its lock), killing it first if it still runs. The removal
 * is done, and answered, once its record says "removing" on disk and it is out of the state: its
 * name is free and no listing shows it. The teardown (runc delete, monitor, umount, cgroup,
 * directories, image lease) goes on in the background; after a crash, start-up recovery finishes
 * it from the record.
 */
export async function removeContainerLocked(ctx: RuntimeContext, rec: ContainerRecord): Promise<void> {
  const timer = new StepTimer(ctx.log, 'container removal', { container: rec.id });
  if (rec.phase === 'created' || rec.phase === 'running') await stopContainerLocked(ctx, rec, 0);
  timer.mark('stop');
  if (rec.phase !== 'removing') await ctx.records.markContainerRemoving(rec);
  timer.mark('record');
  timer.done();
  ctx.state.containers.delete(rec.id);
  ctx.state.containerNames.release(rec.nameKey, rec.id);
  ctx.exitWatch.exitRecorded(rec.id);
  ctx.events.container(rec, 'CONTAINER_DELETED_EVENT');
  ctx.log.info({ container: rec.id, name: rec.fullName }, 'container removed');
  ctx.cleanups.start(rec.id, rec.sandboxId, `container ${rec.id}`, () => cleanUpRemovedContainer(ctx, rec));
}

/** What a removed container leaves on the machine, undone; its record goes with its directory. */
async function cleanUpRemovedContainer(ctx: RuntimeContext, rec: ContainerRecord): Promise<void> {
  const timer = new StepTimer(ctx.log, 'container cleanup', { container: rec.id });
  await teardownContainer(ctx, rec, timer);
  if (rec.logPath && ctx.journald) await forgetContainerLog(ctx, rec.id);
  timer.mark('logs-svc forget');
  timer.done();
}
