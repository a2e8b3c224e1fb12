import type { RuntimeContext } from '../daemon/context.js';
import { forgetContainerLog } from '../logs/logs-client.js';
import type { ContainerRecord } from '../state/records.js';
import { stopContainerLocked } from './container-stop-locked.js';
import { teardownContainer } from './container-teardown.js';

/** Removes a container (the caller holds its lock), killing it first if it still runs. */
export async function removeContainerLocked(ctx: RuntimeContext, rec: ContainerRecord): Promise<void> {
  if (rec.phase === 'created' || rec.phase === 'running') await stopContainerLocked(ctx, rec, 0);
  if (rec.phase !== 'removing') {
    rec.phase = 'removing';
    await ctx.records.saveContainer(rec);
  }
  await teardownContainer(ctx, rec);
  if (rec.logPath && ctx.journald) await forgetContainerLog(ctx, rec.id);
  ctx.state.containers.delete(rec.id);
  ctx.state.releaseContainerName(rec.nameKey, rec.id);
  ctx.log.info({ container: rec.id, name: rec.fullName }, 'container removed');
}
