// CRI RuntimeService.ExecSync
import { promises as fs } from 'node:fs';
import { status } from '@grpc/grpc-js';
import { runtimeForConmon } from '../daemon/runtime-handlers.js';
import { StatusError } from '@skiff/common';
import type { cri } from '@skiff/proto';
import { ConmonError } from '../conmon/conmon.js';
import { execSync } from '../conmon/conmon-exec-sync.js';
import { refreshContainer } from '../container/container-state.js';
import { containerState } from '../container/container-view.js';
import { requireContainer } from '../container/require-container.js';
import type { RuntimeContext } from '../daemon/context.js';
import type { Spec } from '../oci/runtime-spec.js';

/** Output kept per stream; more is dropped. */
export const EXEC_OUTPUT_LIMIT = 16 * 1024 * 1024;

function capped(bytes: Buffer): Buffer {
  return bytes.length > EXEC_OUTPUT_LIMIT ? bytes.subarray(0, EXEC_OUTPUT_LIMIT) : bytes;
}

/**
 * ExecSync through conmon, which stops reading when the command exits; at the timeout, or when
 * the client goes away (its own deadline, a cancel), the command's process group is killed:
 * its output is the call's only result and nobody would read it. The command runs as the
 * container's process does: same user, environment, working directory, capabilities and
 * confinement.
 */
export async function execSyncCall(ctx: RuntimeContext, request: cri.ExecSyncRequest__Output, signal?: AbortSignal): Promise<cri.ExecSyncResponse> {
  const rec = await refreshContainer(ctx, requireContainer(ctx, 'ExecSync', request.container_id));
  if (request.cmd.length === 0) throw new StatusError(status.INVALID_ARGUMENT, 'ExecSync: cmd is required');
  if (rec.phase !== 'running') {
    throw new StatusError(status.FAILED_PRECONDITION, `ExecSync: container ${rec.id} is ${containerState(rec)}; commands run only in a running container`);
  }
  const spec = JSON.parse(await fs.readFile(ctx.paths.container(rec.id).spec, 'utf8')) as Spec;
  const timeoutSeconds = Math.max(0, Number(request.timeout));
  await fs.mkdir(ctx.paths.execDir, { recursive: true, mode: 0o700 });
  let result;
  try {
    result = await execSync({
      conmonPath: ctx.config.runtime.conmon,
      runtime: runtimeForConmon(ctx.handlers.forExisting(rec.runtimeHandler)),
      id: rec.id,
      process: { ...spec.process, args: [...request.cmd], terminal: false },
      timeoutSeconds,
      // conmon caps both streams together; twice the per-stream limit leaves each its share.
      maxOutputBytes: 2 * EXEC_OUTPUT_LIMIT,
      workDir: ctx.paths.execDir,
      signal,
    });
  } catch (err) {
    if (err instanceof ConmonError) throw new StatusError(status.UNKNOWN, err.message);
    throw err;
  }
  if (result.abandoned) {
    throw new StatusError(status.CANCELLED, `ExecSync: the client went away (deadline passed or call cancelled); command ${JSON.stringify(request.cmd)} in container ${rec.id} was killed`);
  }
  if (result.timedOut) {
    throw new StatusError(status.DEADLINE_EXCEEDED, `ExecSync: command ${JSON.stringify(request.cmd)} in container ${rec.id} timed out after ${timeoutSeconds} s`);
  }
  return { stdout: capped(result.stdoutBytes), stderr: capped(result.stderrBytes), exit_code: result.exitCode };
}
