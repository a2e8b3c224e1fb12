// CRI RuntimeService.Exec
import { promises as fs } from 'node:fs';
import { status } from '@grpc/grpc-js';
import { StatusError } from '@skiff/common';
import type { cri } from '@skiff/proto';
import { requireRunningContainer } from '../container/require-container.js';
import type { RuntimeContext } from '../daemon/context.js';
import { runtimeForConmon } from '../daemon/runtime-handlers.js';
import type { Spec } from '../oci/runtime-spec.js';
import { registerStream } from '../streaming/stream-registration.js';

export async function execCall(ctx: RuntimeContext, req: cri.ExecRequest__Output): Promise<cri.ExecResponse> {
  const rec = await requireRunningContainer(ctx, 'Exec', req.container_id);
  if (req.cmd.length === 0) throw new StatusError(status.INVALID_ARGUMENT, 'Exec: cmd is required');
  const spec = JSON.parse(await fs.readFile(ctx.paths.container(rec.id).spec, 'utf8')) as Spec;
  // The handler's runtime travels with the request: stream-svc keeps no table of handlers, so one a reload added works at once.
  const url = await registerStream(ctx.config.stream.internal_socket, 'Exec', {
    kind: 'exec',
    containerId: rec.id,
    cmd: [...req.cmd],
    runtime: runtimeForConmon(ctx.handlers.forExisting(rec.runtimeHandler)),
    process: { ...spec.process },
    tty: req.tty,
    stdin: req.stdin,
    stdout: req.stdout,
    stderr: req.stderr,
  });
  return { url };
}
