// CRI RuntimeService.ExecSync
import { promises as fs } from 'node:fs';
import { status } from '@grpc/grpc-js';
import { runtimeForConmon } from '../daemon/runtime-handlers.js';
import { StatusError } from '@skiff/common';
import type { cri } from '@skiff/proto';
import { ConmonError } from '../conmon/conmon.js';
import { execSync } from '../conmon/conmon-exec-sync.js';
import { CRI_CLIENT_MESSAGE_LIMIT, fitExecReply } from '../conmon/exec-output.js';
import { refreshContainer } from '../container/container-state.js';
import { containerState } from '../container/container-view.js';
import { requireContainer } from '../container/require-container.js';
import type { RuntimeContext } from '../daemon/context.js';
import type { Spec } from '../oci/runtime-spec.js';

/**
 * ExecSync through conmon, which stops reading when the command exits; at the timeout, or when
 * the client goes away (its own deadline, a cancel), the command's process group is killed:
 * its output is the call's only result and nobody would read it. The command runs as the
 * container's process does: same user, environment, working directory, capabilities and
 * confinement. The reply fits the kubelet's and crictl's 16 MiB message limit: more output is
 * cut, and stderr says so.
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
      // conmon's cap counts its line prefixes too; twice the reply's size leaves the output its share.
      maxOutputBytes: 2 * CRI_CLIENT_MESSAGE_LIMIT,
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
  const output = fitExecReply(result.stdoutBytes, result.stderrBytes, result.outputCut);
  if (output.truncated) ctx.log.debug({ container: rec.id, cmd: request.cmd.slice(0, 3) }, 'ExecSync output truncated to fit the reply');
  return { stdout: output.stdout, stderr: output.stderr, exit_code: result.exitCode };
}
