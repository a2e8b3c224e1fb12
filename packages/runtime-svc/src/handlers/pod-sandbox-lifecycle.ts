import { status } from '@grpc/grpc-js';
import { StatusError } from '@skiff/common';
import type { cri } from '@skiff/proto';
import type { RuntimeContext } from '../daemon/context.js';
import { removePodSandboxLocked, runPodSandbox, stopPodSandboxLocked } from '../sandbox/sandbox-lifecycle.js';
import type { SandboxRecord } from '../state/records.js';

export async function runPodSandboxCall(ctx: RuntimeContext, request: cri.RunPodSandboxRequest__Output): Promise<cri.RunPodSandboxResponse> {
  return { pod_sandbox_id: await runPodSandbox(ctx, request) };
}

/** Runs `operation` on the sandbox under its lock; a sandbox that is (or just became) gone is success. */
async function withExistingSandbox(ctx: RuntimeContext, call: string, id: string, operation: (rec: SandboxRecord) => Promise<void>): Promise<void> {
  if (!id) throw new StatusError(status.INVALID_ARGUMENT, `${call}: pod_sandbox_id is required`);
  const rec = ctx.state.findSandbox(id);
  if (!rec) return;
  await ctx.locks.run(rec.id, async () => {
    if (ctx.state.sandboxes.get(rec.id) === rec) await operation(rec);
  });
}

/** Idempotent: stopping a stopped or unknown sandbox succeeds. */
export async function stopPodSandboxCall(ctx: RuntimeContext, request: cri.StopPodSandboxRequest__Output): Promise<cri.StopPodSandboxResponse> {
  await withExistingSandbox(ctx, 'StopPodSandbox', request.pod_sandbox_id, (rec) => stopPodSandboxLocked(ctx, rec));
  return {};
}

/** Idempotent: removing a removed or unknown sandbox succeeds. */
export async function removePodSandboxCall(ctx: RuntimeContext, request: cri.RemovePodSandboxRequest__Output): Promise<cri.RemovePodSandboxResponse> {
  await withExistingSandbox(ctx, 'RemovePodSandbox', request.pod_sandbox_id, (rec) => removePodSandboxLocked(ctx, rec));
  return {};
}
