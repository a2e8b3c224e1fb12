// CRI RuntimeService.ReopenContainerLog
import { status } from '@grpc/grpc-js';
import { StatusError } from '@skiff/common';
import type { cri } from '@skiff/proto';
import { refreshContainer } from '../container/container-state.js';
import { containerState } from '../container/container-view.js';
import { requireContainer } from '../container/require-container.js';
import type { RuntimeContext } from '../daemon/context.js';
import { reopenContainerLogFile } from '../logs/logs-client.js';

/**
 * ReopenContainerLog (the kubelet renamed the log file): logs-svc writes the lines sent before
 * the call to the renamed file and the later ones to a new file at the log path. A container that
 * is not running has nothing to reopen: FailedPrecondition, as containerd answers.
 */
export async function reopenContainerLogCall(ctx: RuntimeContext, request: cri.ReopenContainerLogRequest__Output): Promise<cri.ReopenContainerLogResponse> {
  const rec = await refreshContainer(ctx, requireContainer(ctx, 'ReopenContainerLog', request.container_id));
  if (rec.phase !== 'running') {
    throw new StatusError(status.FAILED_PRECONDITION, `ReopenContainerLog: container ${rec.id} is ${containerState(rec)}, not running`);
  }
  if (!rec.logPath) throw new StatusError(status.FAILED_PRECONDITION, `ReopenContainerLog: container ${rec.id} has no log path`);
  // Every container with a log file has it written by logs-svc: without journald none runs.
  await reopenContainerLogFile(ctx, rec.id);
  return {};
}
