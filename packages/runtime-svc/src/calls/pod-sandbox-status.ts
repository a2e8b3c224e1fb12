// CRI RuntimeService.PodSandboxStatus
import type { cri } from '@skiff/proto';
import type { RuntimeContext } from '../daemon/context.js';
import { requireSandbox } from '../sandbox/require-sandbox.js';
import { sandboxIsReady } from '../sandbox/sandbox-state.js';
import { sandboxVerboseInfo, toCriSandboxStatus } from '../sandbox/sandbox-view.js';
import { nowNanos } from '../util/time.js';

export async function podSandboxStatusCall(ctx: RuntimeContext, request: cri.PodSandboxStatusRequest__Output): Promise<cri.PodSandboxStatusResponse> {
  const rec = requireSandbox(ctx, request.pod_sandbox_id);
  const ready = await sandboxIsReady(ctx, rec);
  const response: cri.PodSandboxStatusResponse = { status: toCriSandboxStatus(rec, ready), timestamp: nowNanos() };
  if (request.verbose) response.info = sandboxVerboseInfo(rec, ctx.paths.sandbox(rec.id).bundle);
  return response;
}
