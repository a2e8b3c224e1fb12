import { status } from '@grpc/grpc-js';
import { StatusError } from '@skiff/common';
import type { RuntimeContext } from '../daemon/context.js';
import type { ContainerRecord } from '../state/records.js';

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
