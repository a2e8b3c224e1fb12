import { status } from '@grpc/grpc-js';
import { StatusError } from '@skiff/common';
import type { RuntimeContext } from '../daemon/context.js';
import type { ContainerRecord } from '../state/records.js';
import { refreshContainer } from './container-state.js';
import { containerState } from './container-view.js';

/** A container by id or prefix, or NotFound. */
export function requireContainer(ctx: RuntimeContext, call: string, id: string): ContainerRecord {
  if (!id) throw new StatusError(status.INVALID_ARGUMENT, `${call}: container_id is required`);
  const rec = ctx.state.findContainer(id);
  if (!rec) throw new StatusError(status.NOT_FOUND, `${call}: container ${id} does not exist`);
  return rec;
}

/** Runs `operation` under the container's lock, NotFound if it was removed while waiting. */
export async function withContainerLock<T>(ctx: RuntimeContext, rec: ContainerRecord, operation: () => Promise<T>): Promise<T> {
  return ctx.locks.run(rec.id, async () => {
    if (ctx.state.containers.get(rec.id) !== rec) throw new StatusError(status.NOT_FOUND, `container ${rec.id} was removed`);
    return operation();
  });
}

/** Runs `operation` on the container under its lock; a container that is (or just became) gone is success. */
export async function withExistingContainer(ctx: RuntimeContext, call: string, id: string, operation: (rec: ContainerRecord) => Promise<void>): Promise<void> {
  if (!id) throw new StatusError(status.INVALID_ARGUMENT, `${call}: container_id is required`);
  const rec = ctx.state.findContainer(id);
  if (!rec) return;
  await ctx.locks.run(rec.id, async () => {
    if (ctx.state.containers.get(rec.id) === rec) await operation(rec);
  });
}

/** A running container by id or prefix: NotFound, or FailedPrecondition naming its state. */
export async function requireRunningContainer(ctx: RuntimeContext, call: string, id: string): Promise<ContainerRecord> {
  const rec = await refreshContainer(ctx, requireContainer(ctx, call, id));
  if (rec.phase !== 'running') {
    // A created container has no process yet (StartContainer makes it), so nothing to attach or exec to.
    const hint = rec.phase === 'created' ? ' (start it with StartContainer first)' : '';
    throw new StatusError(status.FAILED_PRECONDITION, `${call}: container ${rec.id} is ${containerState(rec)}; it must be running${hint}`);
  }
  return rec;
}
