// CRI RuntimeService.Attach
import { join } from 'node:path';
import { status } from '@grpc/grpc-js';
import { StatusError } from '@skiff/common';
import type { cri } from '@skiff/proto';
import { requireRunningContainer } from '../container/require-container.js';
import type { RuntimeContext } from '../daemon/context.js';
import { registerStream } from '../streaming/stream-registration.js';

/**
 * Attach goes to the container's conmon. What the stream can carry is the container's: a terminal
 * merges stderr into stdout, and stdin exists only if the container was created with one.
 */
export async function attachCall(ctx: RuntimeContext, req: cri.AttachRequest__Output): Promise<cri.AttachResponse> {
  const rec = await requireRunningContainer(ctx, 'Attach', req.container_id);
  if (req.stdin && !rec.stdin) {
    throw new StatusError(status.FAILED_PRECONDITION, `Attach: container ${rec.id} was not created with stdin open (stdin: true), so there is no stdin to attach to`);
  }
  const url = await registerStream(ctx.config.stream.internal_socket, 'Attach', {
    kind: 'attach',
    containerId: rec.id,
    attachSocket: join(ctx.paths.attachDir, rec.id, 'attach'),
    ctlFile: join(ctx.paths.container(rec.id).bundle, 'ctl'),
    tty: rec.tty,
    stdin: req.stdin,
    stdout: req.stdout,
    stderr: req.stderr && !rec.tty,
  });
  return { url };
}
