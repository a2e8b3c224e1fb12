import { status } from '@grpc/grpc-js';
import { StatusError } from '@skiff/common';
import type { RuntimeContext } from '../daemon/context.js';
import type { SandboxRecord } from '../state/records.js';

/** A sandbox by id or prefix, or NotFound. */
export function requireSandbox(ctx: RuntimeContext, id: string): SandboxRecord {
  if (!id) throw new StatusError(status.INVALID_ARGUMENT, 'pod_sandbox_id is required');
  const rec = ctx.state.findSandbox(id);
  if (!rec) throw new StatusError(status.NOT_FOUND, `pod sandbox ${id} does not exist`);
  return rec;
}

/** Runs `operation` on the sandbox under its lock; a sandbox that is (or just became) gone is success. */
export async function withExistingSandbox(ctx: RuntimeContext, call: string, id: string, operation: (rec: SandboxRecord) => Promise<void>): Promise<void> {
  if (!id) throw new StatusError(status.INVALID_ARGUMENT, `${call}: pod_sandbox_id is required`);
  const rec = ctx.state.findSandbox(id);
  if (!rec) return;
  await ctx.locks.run(rec.id, async () => {
    if (ctx.state.sandboxes.get(rec.id) === rec) await operation(rec);
  });
}
