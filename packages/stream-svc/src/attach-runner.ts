import type { Logger, AttachStreamRequest } from '@skiff/common/core';
import { FRAME_STDERR, FRAME_STDOUT } from './attach-frames.js';
import { AttachRelay, sendResize } from './attach-relay.js';
import { OutputFlow } from './output-flow.js';
import type { StreamSession } from './session.js';

/**
 * Attaches a client to a running container's stdio through its conmon's attach socket (via the
 * relay). conmon marks each packet stdout or stderr; for a TTY container everything is stdout.
 * Resizes go to conmon's control fifo. The client leaving only drops the connection: the
 * container goes on, and conmon closes its stdin if it was started for stdin_once. The stream
 * ends when the container exits (conmon closes the socket).
 */
export async function runAttach(request: AttachStreamRequest, session: StreamSession, log: Logger): Promise<void> {
  let clientGone = false;
  let resizes = Promise.resolve();
  const flow = new OutputFlow(session);
  const relay: AttachRelay = new AttachRelay(request.attachSocket, {
    onPacket: (type, data) => {
      const output = relay.output;
      if (!output) return;
      if (type === FRAME_STDOUT && request.stdout) flow.forward(output, () => session.writeStdout(data));
      else if (type === FRAME_STDERR && request.stderr) flow.forward(output, () => session.writeStderr(data));
    },
  });
  session.onStdin((chunk) => {
    if (!request.stdin) return;
    if (chunk === null) relay.endStdin();
    else relay.writeStdin(chunk);
  });
  session.onResize((size) => {
    if (!request.tty) return;
    resizes = resizes
      .then(() => sendResize(request.ctlFile, size))
      .catch((err: unknown) => log.debug({ container: request.containerId, err: (err as Error).message }, 'terminal resize not delivered'));
  });
  session.onClientGone(() => {
    clientGone = true;
    flow.resumeAll();
    relay.close();
  });

  try {
    await relay.connected;
  } catch (err) {
    relay.close();
    await relay.ended;
    if (!clientGone) session.finish({ error: `attach to container ${request.containerId} failed: ${(err as Error).message}` });
    return;
  }
  log.info({ container: request.containerId, relay: relay.pid }, 'attached');
  await relay.ended;
  await resizes;
  if (clientGone) {
    log.info({ container: request.containerId }, 'detached: client went away');
    return;
  }
  log.info({ container: request.containerId }, 'attach ended: the container closed its output');
  session.finish({ exitCode: 0 });
}
