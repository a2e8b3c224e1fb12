import { spawn, type StdioOptions } from 'node:child_process';
import type { Readable } from 'node:stream';
import { SpawnServer, type SpawnOutcome } from './spawn-server.js';

export interface RunCommandOptions {
  /** Bytes written to the child's stdin, which is then closed; without it stdin is /dev/null. */
  input?: string | Uint8Array;
  env?: NodeJS.ProcessEnv;
  cwd?: string;
  /** The child is killed with SIGKILL after this long and the call rejects with CommandTimeoutError. */
  timeoutMs?: number;
  /**
   * How long to keep reading stdout/stderr after the child has exited. A child that leaves a
   * background process behind (a daemonised container, an exec'd shell's `cmd &`) keeps the pipes
   * open forever; we stop reading after this grace period instead of waiting for EOF.
   */
  drainAfterExitMs?: number;
  /**
   * stdout and stderr go to /dev/null. For a child that hands its stdio on to a process meant to
   * outlive it (`runc run --detach`): a pipe of ours would stay open in that process for good.
   */
  discardOutput?: boolean;
}

export interface CommandResult {
  /** Exit code, or null when the child was killed by a signal. */
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
}

export class CommandTimeoutError extends Error {
  constructor(
    readonly command: string,
    readonly timeoutMs: number,
    readonly stderr: string,
  ) {
    super(`${command} did not finish within ${timeoutMs} ms${stderr ? `: ${stderr.trim()}` : ''}`);
    this.name = 'CommandTimeoutError';
  }
}

const DEFAULT_DRAIN_MS = 250;

let spawnServer: SpawnServer | undefined;

/**
 * From now on this process's commands are started by a small helper
 * process instead of by Node, which forks the whole process for each and holds the event loop
 * meanwhile (see spawn-server.ts). For a daemon that starts many commands at once. False, and
 * nothing changes, when the helper's interpreter is missing.
 */
export function runCommandsThroughSpawnServer(onError?: (message: string) => void): boolean {
  if (!SpawnServer.available()) return false;
  spawnServer ??= new SpawnServer(onError);
  return true;
}

/** The helper this process's commands go through, when they do. */
export function activeSpawnServer(): SpawnServer | undefined {
  return spawnServer;
}

/** Back to Node's own spawn (stops the helper; commands it started run on). */
export function stopSpawnServer(): void {
  spawnServer?.close();
  spawnServer = undefined;
}

function resultOf(outcome: SpawnOutcome, file: string, args: readonly string[], options: RunCommandOptions): CommandResult {
  if ('result' in outcome) return outcome.result;
  if ('timedOut' in outcome) throw new CommandTimeoutError([file, ...args].join(' '), options.timeoutMs ?? 0, outcome.stderr);
  throw Object.assign(new Error(`cannot run ${file}: ${outcome.spawnError}`), { code: outcome.errno });
}

/**
 * Runs a program to completion and collects its output. Resolves with a non-zero exit code as a
 * normal result: callers decide what a failure means for them.
 */
export async function runCommand(file: string, args: readonly string[], options: RunCommandOptions = {}): Promise<CommandResult> {
  if (spawnServer) return resultOf(await spawnServer.run(file, args, options), file, args, options);
  const { report: _none, ...result } = await spawnAndCollect(file, args, options, undefined);
  return result;
}

/** What runReportingCommand hands back: the result, and the line the program reported (undefined if none). */
export interface ReportedResult extends CommandResult {
  report: string | undefined;
}

/**
 * runCommand for a program that reports on a pipe whose descriptor it finds in the environment
 * variable `reportPipeEnv` (conmon's _OCI_SYNCPIPE): the result carries the first line written
 * there. It waits for that line (within `timeoutMs`) even after the program has exited, since
 * what the program forked may report later.
 */
export async function runReportingCommand(file: string, args: readonly string[], reportPipeEnv: string, options: RunCommandOptions = {}): Promise<ReportedResult> {
  if (spawnServer) {
    const { outcome, report } = await spawnServer.runReporting(file, args, options, reportPipeEnv);
    return { ...resultOf(outcome, file, args, options), report };
  }
  return spawnAndCollect(file, args, options, reportPipeEnv);
}

/** The report pipe's descriptor in a child Node spawns. */
const REPORT_FD = 3;

function spawnAndCollect(file: string, args: readonly string[], options: RunCommandOptions, reportPipeEnv: string | undefined): Promise<ReportedResult> {
  const output = options.discardOutput ? 'ignore' : 'pipe';
  const stdio: StdioOptions = [options.input === undefined ? 'ignore' : 'pipe', output, output, ...(reportPipeEnv ? ['pipe' as const] : [])];
  const env = reportPipeEnv ? { ...(options.env ?? process.env), [reportPipeEnv]: String(REPORT_FD) } : (options.env ?? process.env);
  return new Promise((resolve, reject) => {
    const child = spawn(file, args, { stdio, env, cwd: options.cwd });
    const stdout: Buffer[] = [];
    const stderr: Buffer[] = [];
    let timer: NodeJS.Timeout | undefined;
    let drainTimer: NodeJS.Timeout | undefined;
    let timedOut = false;
    let exit: { code: number | null; signal: NodeJS.Signals | null } | undefined;
    let settled = false;
    let streamsOpen = options.discardOutput ? 0 : 2;
    let report: string | undefined;
    let reportDone = reportPipeEnv === undefined;
    const reportPipe = reportPipeEnv ? (child.stdio[REPORT_FD] as Readable) : undefined;

    const finish = (): void => {
      if (settled || !exit || !reportDone) return;
      settled = true;
      clearTimeout(timer);
      clearTimeout(drainTimer);
      child.stdout?.destroy();
      child.stderr?.destroy();
      reportPipe?.destroy();
      const err = Buffer.concat(stderr).toString('utf8');
      if (timedOut) {
        reject(new CommandTimeoutError([file, ...args].join(' '), options.timeoutMs ?? 0, err));
        return;
      }
      resolve({ code: exit.code, signal: exit.signal, stdout: Buffer.concat(stdout).toString('utf8'), stderr: err, report });
    };
    // Once exited and reported: the output is read until its pipes close, or for the drain time.
    const drain = (): void => {
      if (!exit || !reportDone) return;
      if (streamsOpen === 0) finish();
      else drainTimer ??= setTimeout(finish, options.drainAfterExitMs ?? DEFAULT_DRAIN_MS);
    };

    child.stdout?.on('data', (chunk: Buffer) => stdout.push(chunk));
    child.stderr?.on('data', (chunk: Buffer) => stderr.push(chunk));
    const onStreamClosed = (): void => {
      streamsOpen -= 1;
      if (streamsOpen === 0) finish();
    };
    child.stdout?.on('close', onStreamClosed);
    child.stderr?.on('close', onStreamClosed);

    if (reportPipe) {
      let text = '';
      const reported = (line: string | undefined): void => {
        if (reportDone) return;
        report = line;
        reportDone = true;
        reportPipe.destroy();
        drain();
      };
      reportPipe.on('data', (chunk: Buffer) => {
        text += chunk.toString('utf8');
        const nl = text.indexOf('\n');
        if (nl >= 0) reported(text.slice(0, nl));
      });
      reportPipe.on('close', () => reported(text === '' ? undefined : text));
      reportPipe.on('error', () => reported(text === '' ? undefined : text));
    }

    child.on('error', (err) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      clearTimeout(drainTimer);
      reportPipe?.destroy();
      reject(new Error(`cannot run ${file}: ${err.message}`));
    });
    child.on('exit', (code, signal) => {
      exit = { code, signal };
      drain();
    });

    if (options.timeoutMs !== undefined && options.timeoutMs > 0) {
      timer = setTimeout(() => {
        timedOut = true;
        reportDone = true;
        child.kill('SIGKILL');
        drain();
      }, options.timeoutMs);
    }

    if (options.input !== undefined && child.stdin) {
      child.stdin.on('error', () => undefined); // the child may exit without reading its input
      child.stdin.end(options.input);
    }
  });
}
