import { spawn, type StdioOptions } from 'node:child_process';
import { SpawnServer } from './spawn-server.js';

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
 * From now on this process's commands (those without a `cwd`) are started by a small helper
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

async function runThroughServer(server: SpawnServer, file: string, args: readonly string[], options: RunCommandOptions): Promise<CommandResult> {
  const outcome = await server.run(file, args, options);
  if ('result' in outcome) return outcome.result;
  if ('timedOut' in outcome) throw new CommandTimeoutError([file, ...args].join(' '), options.timeoutMs ?? 0, outcome.stderr);
  throw Object.assign(new Error(`cannot run ${file}: ${outcome.spawnError}`), { code: outcome.errno });
}

/**
 * Runs a program to completion and collects its output. Resolves with a non-zero exit code as a
 * normal result: callers decide what a failure means for them.
 */
export function runCommand(file: string, args: readonly string[], options: RunCommandOptions = {}): Promise<CommandResult> {
  if (spawnServer && options.cwd === undefined) return runThroughServer(spawnServer, file, args, options);
  const output = options.discardOutput ? 'ignore' : 'pipe';
  const stdio: StdioOptions = [options.input === undefined ? 'ignore' : 'pipe', output, output];
  return new Promise((resolve, reject) => {
    const child = spawn(file, args, { stdio, env: options.env ?? process.env, cwd: options.cwd });
    const stdout: Buffer[] = [];
    const stderr: Buffer[] = [];
    let timer: NodeJS.Timeout | undefined;
    let drainTimer: NodeJS.Timeout | undefined;
    let timedOut = false;
    let exit: { code: number | null; signal: NodeJS.Signals | null } | undefined;
    let settled = false;
    let streamsOpen = options.discardOutput ? 0 : 2;

    const finish = (): void => {
      if (settled || !exit) return;
      settled = true;
      clearTimeout(timer);
      clearTimeout(drainTimer);
      child.stdout?.destroy();
      child.stderr?.destroy();
      const err = Buffer.concat(stderr).toString('utf8');
      if (timedOut) {
        reject(new CommandTimeoutError([file, ...args].join(' '), options.timeoutMs ?? 0, err));
        return;
      }
      resolve({ code: exit.code, signal: exit.signal, stdout: Buffer.concat(stdout).toString('utf8'), stderr: err });
    };

    child.stdout?.on('data', (chunk: Buffer) => stdout.push(chunk));
    child.stderr?.on('data', (chunk: Buffer) => stderr.push(chunk));
    const onStreamClosed = (): void => {
      streamsOpen -= 1;
      if (streamsOpen === 0) finish();
    };
    child.stdout?.on('close', onStreamClosed);
    child.stderr?.on('close', onStreamClosed);

    child.on('error', (err) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      clearTimeout(drainTimer);
      reject(new Error(`cannot run ${file}: ${err.message}`));
    });
    child.on('exit', (code, signal) => {
      exit = { code, signal };
      if (streamsOpen === 0) finish();
      else drainTimer = setTimeout(finish, options.drainAfterExitMs ?? DEFAULT_DRAIN_MS);
    });

    if (options.timeoutMs !== undefined && options.timeoutMs > 0) {
      timer = setTimeout(() => {
        timedOut = true;
        child.kill('SIGKILL');
      }, options.timeoutMs);
    }

    if (options.input !== undefined && child.stdin) {
      child.stdin.on('error', () => undefined); // the child may exit without reading its input
      child.stdin.end(options.input);
    }
  });
}
