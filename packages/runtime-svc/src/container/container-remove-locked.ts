import type { RuntimeContext } from '../daemon/context.js';
import { forgetContainerLog } from '../logs/logs-client.js';
import type { ContainerRecord } from '../state/records.js';
import { StepTimer } from '@skiff/common';
import { stopContainerLocked } from './container-stop-locked.js';
import { teardownContainer } from './container-teardown.js';

/** Removes a container (the caller holds its lock), killing it first if it still runs. */
export async function removeContainerLocked(ctx: RuntimeContext, rec: ContainerRecord): Promise<void> {
  const timer = new StepTimer(ctx.log, 'container removal', { container: rec.id });
  if (rec.phase === 'created' || rec.phase === 'running') await stopContainerLocked(ctx, rec, 0);
  timer.mark('stop');
  if (rec.phase !== 'removing') {
    rec.phase = 'removing';
    await ctx.records.saveContainer(rec);
  }
  timer.mark('record');
  await teardownContainer(ctx, rec, timer);
  if (rec.logPath && ctx.journald) await forgetContainerLog(ctx, rec.id);
  timer.mark('logs-svc forget');
  timer.done();
  ctx.state.containers.delete(rec.id);
  ctx.state.releaseContainerName(rec.nameKey, rec.id);
  ctx.events.container(rec, 'CONTAINER_DELETED_EVENT');
  ctx.log.info({ container: rec.id, name: rec.fullName }, 'container removed');
}
