import { randomBytes } from 'node:crypto';
import { promises as fs } from 'node:fs';
import { join } from 'node:path';
import { sleep, withTimeout, type ExecStreamRequest, type Logger, type OciProcess } from '@skiff/common/core';
import { FRAME_STDERR, FRAME_STDOUT } from './attach-frames.js';
import { AttachRelay, sendResize } from './attach-relay.js';
import { spawnExecConmon, type ExecConmon } from './conmon-exec.js';
import { killExecProcess, killInSandbox } from './exec-process.js';
import { OutputFlow, outputEnded } from './output-flow.js';
import type { StreamSession, TerminalSize } from './session.js';

/** How long to wait for the client's first terminal size before the command starts without one. */
const INITIAL_SIZE_WAIT_MS = 250;
/** Limit on conmon getting as far as a listening attach socket. */
const SETUP_TIMEOUT_MS = 30_000;
/** Output still in flight after the exit code arrived. */
const DRAIN_MS = 2_000;

/**
 * Runs an exec request with a terminal through `conmon --exec --exec-attach --terminal`: conmon
 * owns the pty (runc hands it the console), the client talks to it over conmon's attach socket
 * through the relay, and resizes go to conmon's control fifo. The command starts only once we are
 * attached, with the client's first terminal size in its process spec (runc applies it before
 * the command runs), so no output is lost and none is written at the wrong size.
 */
export async function runExecWithTerminal(request: ExecStreamRequest, conmonPath: string, session: StreamSession, scratchDir: string, log: Logger): Promise<void> {
  const dir = await fs.mkdtemp(join(scratchDir, 'exec-'));
  const processFile = join(dir, 'process.json');
  const pidFile = join(dir, 'pid');
  const ctlFile = join(dir, 'ctl');
  let clientGone = false;
  let size: TerminalSize | undefined;
  let sizeArrived: () => void = () => undefined;
  const firstSize = new Promise<void>((r) => {
    sizeArrived = r;
  });
  let started = false;
  let resizes = Promise.resolve();
  let relay: AttachRelay | undefined;
  let conmon: ExecConmon | undefined;
  let execPid: number | undefined;
  let runtimeErrors = '';
  const flow = new OutputFlow(session);

  session.onResize((next) => {
    size = next;
    sizeArrived();
    // Before the start the size goes into the process spec; afterwards through conmon.
    if (!started) return;
    resizes = resizes.then(() => sendResize(ctlFile, next)).catch((err: unknown) => log.debug({ err: (err as Error).message }, 'terminal resize not delivered'));
  });
  session.onClientGone(() => {
    clientGone = true;
    flow.resumeAll();
    relay?.close();
    if (execPid !== undefined && conmon) killExecProcess(execPid, conmon.child);
    else if (conmon && conmon.child.exitCode === null) conmon.child.kill('SIGKILL');
    if (execPid !== undefined) killInSandbox(request.runtime, request.containerId, pidFile);
  });

  try {
    conmon = spawnExecConmon({
      conmonPath,
      runtime: request.runtime,
      containerId: request.containerId,
      sessionId: `${request.containerId.slice(0, 12)}-exec-${randomBytes(6).toString('hex')}`,
      dir,
      processFile,
      pidFile,
      terminal: true,
      stdin: request.stdin,
    });
    log.info({ container: request.containerId, cmd: request.cmd, conmon: conmon.child.pid }, 'exec with terminal started');
    conmon.start.write(Buffer.from([0]));
    const ready = await withTimeout(conmon.attachReady.next(), SETUP_TIMEOUT_MS, 'conmon attach setup');
    if (!ready || ready.data < 0) throw new Error(ready?.message ?? (conmon.stderr() || 'conmon ended before its attach socket was ready'));
    if (clientGone) return;

    const opened: AttachRelay = new AttachRelay(join(dir, 'attach'), {
      onPacket: (type, data) => {
        const output = opened.output;
        if (type === FRAME_STDOUT && output) flow.forward(output, () => session.writeStdout(data));
        else if (type === FRAME_STDERR && runtimeErrors.length < 64 * 1024) runtimeErrors += data.toString('utf8');
      },
    });
    relay = opened;
    await withTimeout(relay.connected, SETUP_TIMEOUT_MS, 'connecting to the attach socket');
    // The session has held the client's input until now.
    const attached = relay;
    session.onStdin((chunk) => {
      if (!request.stdin) return;
      if (chunk === null) attached.endStdin();
      else attached.writeStdin(chunk);
    });
    if (!size) await Promise.race([firstSize, sleep(INITIAL_SIZE_WAIT_MS)]);
    if (clientGone) return;

    const env = [...request.process.env];
    if (!env.some((e) => e.startsWith('TERM='))) env.push('TERM=xterm');
    const spec: OciProcess = { ...request.process, args: request.cmd, terminal: true, env };
    if (size) spec.consoleSize = { height: size.height, width: size.width };
    await fs.writeFile(processFile, JSON.stringify(spec), { mode: 0o600 });
    started = true;
    conmon.start.end(Buffer.from([0]));

    const pidMessage = await conmon.messages.next();
    if (!pidMessage || pidMessage.data <= 0) {
      throw new Error(pidMessage?.message?.trim() || runtimeErrors.trim() || conmon.stderr() || 'conmon reported no process');
    }
    execPid = pidMessage.data;
    if (clientGone) {
      killExecProcess(execPid, conmon.child);
      killInSandbox(request.runtime, request.containerId, pidFile);
    }
    const exitMessage = await conmon.messages.next();
    await Promise.race([relay.ended, outputEnded([relay.output], DRAIN_MS)]);
    if (clientGone) {
      log.info({ container: request.containerId, cmd: request.cmd }, 'exec with terminal ended: client went away');
      return;
    }
    if (!exitMessage || exitMessage.data < 0) {
      session.finish({ error: `exec in container ${request.containerId} failed: ${exitMessage?.message?.trim() || conmon.stderr() || 'conmon reported no exit code'}` });
      return;
    }
    log.info({ container: request.containerId, cmd: request.cmd, exitCode: exitMessage.data }, 'exec with terminal ended');
    session.finish({ exitCode: exitMessage.data });
  } catch (err) {
    if (!clientGone) session.finish({ error: `exec in container ${request.containerId} failed: ${(err as Error).message}` });
  } finally {
    relay?.close();
    if (conmon) {
      // Normally gone by now; one stuck before running the command holds nothing worth keeping.
      const stuck = setTimeout(() => conmon?.child.kill('SIGKILL'), DRAIN_MS);
      if (conmon.child.exitCode === null && conmon.child.signalCode === null && !started) conmon.child.kill('SIGKILL');
      await conmon.exited;
      clearTimeout(stuck);
    }
    await resizes;
    await fs.rm(dir, { recursive: true, force: true });
  }
}
