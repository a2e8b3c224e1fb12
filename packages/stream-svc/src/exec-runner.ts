import { spawn, type ChildProcess } from 'node:child_process';
import { promises as fs } from 'node:fs';
import { join } from 'node:path';
import { pollUntil, runtimeCommand, type Logger, type ExecStreamRequest } from '@skiff/common/core';
import { killExecProcess, killInSandbox } from './exec-process.js';
import { runExecWithTerminal } from './exec-tty-runner.js';
import { OutputFlow, outputEnded } from './output-flow.js';
import type { StreamSession } from './session.js';

/** After the command exited, output is forwarded until it has been idle this long (a background child may hold the pipes). */
const DRAIN_MS = 500;

const SIGNAL_NUMBERS: Record<string, number> = { SIGHUP: 1, SIGINT: 2, SIGQUIT: 3, SIGKILL: 9, SIGTERM: 15, SIGPIPE: 13, SIGABRT: 6, SIGSEGV: 11 };

/**
 * Runs an exec request. With a terminal it goes through conmon (`exec-tty-runner.ts`); without
 * one: `runc exec` hands our pipes straight to the process, so
 * stdin, stdout and stderr stream as they come. The process's pid (from runc's pid file) is killed
 * when the client goes away, since runc cannot forward SIGKILL.
 */
export async function runExec(request: ExecStreamRequest, conmonPath: string, session: StreamSession, scratchDir: string, log: Logger): Promise<void> {
  if (request.tty) return runExecWithTerminal(request, conmonPath, session, scratchDir, log);
  const dir = await fs.mkdtemp(join(scratchDir, 'exec-'));
  const processFile = join(dir, 'process.json');
  const pidFile = join(dir, 'pid');
  await fs.writeFile(processFile, JSON.stringify({ ...request.process, args: request.cmd, terminal: false }), { mode: 0o600 });
  const { runtime } = request;
  // A sandbox-kind runtime's launcher has it note the pid inside the sandbox, for killInSandbox.
  const { file, args } = runtimeCommand(runtime, ['exec', '--process', processFile, '--pid-file', pidFile, request.containerId]);
  const child = spawn(file, args, {
    stdio: [request.stdin ? 'pipe' : 'ignore', request.stdout ? 'pipe' : 'ignore', 'pipe'],
  });
  log.info({ container: request.containerId, cmd: request.cmd, pid: child.pid }, 'exec started');

  let runcErrors = '';
  let clientGone = false;
  // A client that reads slowly pauses the pipes, and so the process, instead of filling our memory.
  const flow = new OutputFlow(session);
  const { stdout, stderr } = child;
  stdout?.on('data', (chunk: Buffer) => flow.forward(stdout, () => session.writeStdout(chunk)));
  // runc reports its own failures on stderr too; they reach the client as the command's stderr.
  stderr?.on('data', (chunk: Buffer) => {
    if (request.stderr) flow.forward(stderr, () => session.writeStderr(chunk));
    else if (runcErrors.length < 64 * 1024) runcErrors += chunk.toString('utf8');
  });
  child.stdin?.on('error', () => undefined);
  session.onStdin((chunk) => {
    if (!child.stdin || child.stdin.destroyed) return;
    if (chunk === null) child.stdin.end();
    else child.stdin.write(chunk);
  });
  session.onResize(() => undefined);
  session.onClientGone(() => {
    clientGone = true;
    flow.resumeAll();
    void stopExec(pidFile, child, log);
    killInSandbox(runtime, request.containerId, pidFile);
  });

  const exit = await new Promise<{ code: number | null; signal: NodeJS.Signals | null; error?: Error }>((resolve) => {
    child.once('error', (error) => resolve({ code: null, signal: null, error }));
    child.once('exit', (code, signal) => resolve({ code, signal }));
  });
  await outputEnded([child.stdout, child.stderr], DRAIN_MS);
  child.stdout?.destroy();
  child.stderr?.destroy();
  await fs.rm(dir, { recursive: true, force: true });

  if (clientGone) {
    log.info({ container: request.containerId, cmd: request.cmd }, 'exec ended: client went away');
    return;
  }
  if (exit.error) {
    session.finish({ error: `cannot run ${runtime.path}: ${exit.error.message}` });
    return;
  }
  const exitCode = exit.code ?? 128 + (SIGNAL_NUMBERS[exit.signal ?? ''] ?? 0);
  log.info({ container: request.containerId, cmd: request.cmd, exitCode }, 'exec ended');
  if (runcErrors.trim() && exitCode !== 0) session.finish({ error: `exec in container ${request.containerId} failed: ${runcErrors.trim()}` });
  else session.finish({ exitCode });
}

/** How long a client's departure waits for runc's pid file, which runc writes after the process started. */
const PID_FILE_WAIT_MS = 5_000;

/**
 * Kills the exec'd process, then runc, which cannot forward SIGKILL. The pid is in runc's pid file,
 * which runc writes only after the process has started (it may have printed already): while runc
 * runs, the file is waited for, or killing runc would leave the process running on its own.
 */
async function stopExec(pidFile: string, runc: ChildProcess, log: Logger): Promise<void> {
  const runcRunning = (): boolean => runc.exitCode === null && runc.signalCode === null;
  const pid = await pollUntil(async () => {
    const text = await fs.readFile(pidFile, 'utf8').catch(() => '');
    const found = Number(text.trim());
    if (text.trim() !== '' && Number.isInteger(found) && found > 0) return found;
    return runcRunning() ? undefined : 0;
  }, PID_FILE_WAIT_MS, 5);
  if (pid === undefined || pid === 0) log.debug({ pidFile }, 'exec process not started');
  else if (!killExecProcess(pid, runc)) log.debug({ pid }, 'exec process already gone');
  // Our own child: Node does not signal it once it has been reaped.
  runc.kill('SIGKILL');
}
