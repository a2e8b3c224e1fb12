import { promises as fs } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { runCommand, type CommandResult, type RunCommandOptions } from '@skiff/common';
import type { LinuxResources } from './runtime-spec.js';

export const DEFAULT_RUNC_PATH = '/usr/local/sbin/runc';
export const DEFAULT_RUNC_ROOT = '/run/skiff/runc';

export interface RuncOptions {
  binary?: string;
  /** runc's state directory (--root); Skiff keeps its containers apart from other runc users. */
  root?: string;
  /** Default limit for one runc invocation. */
  timeoutMs?: number;
  /** Let systemd manage cgroups (runc --systemd-cgroup): for hosts where systemd is PID 1. */
  systemdCgroup?: boolean;
  /** Further global flags of this runtime (e.g. runsc's --platform=systrap). */
  extraArgs?: string[];
}

export type RuncStatus = 'creating' | 'created' | 'running' | 'paused' | 'stopped';

/** `runc state` output. */
export interface RuncState {
  ociVersion: string;
  id: string;
  /** 0 once the container has stopped. */
  pid: number;
  status: RuncStatus;
  bundle: string;
  rootfs: string;
  created: string;
  owner?: string;
  annotations?: Record<string, string>;
}

export class RuncError extends Error {
  constructor(
    readonly args: readonly string[],
    readonly exitCode: number | null,
    readonly stderr: string,
  ) {
    super(`runc ${args.join(' ')} failed (exit ${exitCode ?? 'by signal'}): ${stderr.trim() || 'no error output'}`);
    this.name = 'RuncError';
  }

  /** The container id is unknown to runc (never created, or already deleted). */
  get notFound(): boolean {
    return /does not exist|not found/i.test(this.stderr);
  }

  /** The container's init process has already exited (or, with runsc, was never started). */
  get notRunning(): boolean {
    return /not running|process already finished|container not running|cannot signal container .* in state (created|stopped)/i.test(this.stderr);
  }
}

export interface DetachedOptions {
  /** runc writes the container's init pid here. */
  pidFile: string;
  noPivot?: boolean;
  timeoutMs?: number;
}

interface RunOptions {
  input?: string;
  timeoutMs?: number;
  drainAfterExitMs?: number;
}

/** Runs "$@" with the stdin, stdout and stderr of process $1, reopened through /proc. */
const REOPEN_STDIO_SCRIPT = 'pid=$1; shift; exec "$@" <"/proc/$pid/fd/0" >"/proc/$pid/fd/1" 2>"/proc/$pid/fd/2"';

/** Parses runc's --log-format json lines and keeps the error messages. */
export function errorsFromRuncLog(log: string): string {
  const messages: string[] = [];
  for (const line of log.split('\n')) {
    if (!line.trim()) continue;
    try {
      const entry = JSON.parse(line) as { level?: string; msg?: string };
      if ((entry.level === 'error' || entry.level === 'fatal') && entry.msg) messages.push(entry.msg);
    } catch {
      messages.push(line);
    }
  }
  return messages.join('; ');
}

async function withTempDir<T>(fn: (dir: string) => Promise<T>): Promise<T> {
  const dir = await fs.mkdtemp(join(tmpdir(), 'skiff-runc-'));
  try {
    return await fn(dir);
  } finally {
    await fs.rm(dir, { recursive: true, force: true });
  }
}

/** A thin, typed layer over the runc command line. Every call has a time limit. */
export class Runc {
  readonly binary: string;
  readonly root: string;
  readonly systemdCgroup: boolean;
  readonly extraArgs: readonly string[];
  private readonly timeoutMs: number;

  constructor(options: RuncOptions = {}) {
    this.binary = options.binary ?? DEFAULT_RUNC_PATH;
    this.root = options.root ?? DEFAULT_RUNC_ROOT;
    this.timeoutMs = options.timeoutMs ?? 30_000;
    this.systemdCgroup = options.systemdCgroup ?? false;
    this.extraArgs = [...(options.extraArgs ?? [])];
  }

  /** The global flags every call starts with; conmon is given the same through --runtime-arg. */
  get globalArgs(): string[] {
    return ['--root', this.root, ...this.flags()];
  }

  /** What conmon needs to run this runtime the same way. */
  get binaryForConmon(): { path: string; root: string; args: string[] } {
    return { path: this.binary, root: this.root, args: this.flags() };
  }

  private flags(): string[] {
    return [...(this.systemdCgroup ? ['--systemd-cgroup'] : []), ...this.extraArgs];
  }

  private async run(args: string[], options: RunOptions = {}): Promise<CommandResult> {
    const full = [...this.globalArgs, ...args];
    const result = await runCommand(this.binary, full, {
      input: options.input,
      timeoutMs: options.timeoutMs ?? this.timeoutMs,
      drainAfterExitMs: options.drainAfterExitMs,
    });
    if (result.code !== 0) throw new RuncError(args, result.code, result.stderr);
    return result;
  }

  /**
   * `runc run --detach`: created and started in one call, with no monitor. The container's init
   * is reparented to the host's init (or nearest subreaper) when runc exits; for a process whose
   * exit code nobody needs, such as a pod's pause process.
   */
  async runDetached(id: string, bundle: string, options: DetachedOptions): Promise<void> {
    await this.runDetachedCommand(['run', '--detach'], id, bundle, options);
  }

  /**
   * The container inherits runc's stdio, so runc gets /dev/null (a pipe of ours would stay open
   * in the container) and its errors are read from its JSON log instead.
   */
  private async runDetachedCommand(command: string[], id: string, bundle: string, options: DetachedOptions): Promise<void> {
    const args = [...command, '--bundle', bundle, '--pid-file', options.pidFile];
    if (options.noPivot) args.push('--no-pivot');
    args.push(id);
    await this.runLogged(args, { timeoutMs: options.timeoutMs ?? this.timeoutMs, discardOutput: true });
  }

  /**
   * Runs a command whose stdio is not ours to read; its errors come from its JSON log. With
   * `stdioOfPid`, a shell first gives it that process's stdin, stdout and stderr (see startWithStdioOf).
   */
  private async runLogged(args: string[], options: RunCommandOptions & { stdioOfPid?: number }): Promise<void> {
    const { stdioOfPid, ...runOptions } = options;
    await withTempDir(async (dir) => {
      const log = join(dir, 'runc.log');
      const full = ['--log', log, '--log-format', 'json', ...args];
      const command = [this.binary, ...this.globalArgs, ...full];
      const [file, argv] = stdioOfPid === undefined ? [command[0]!, command.slice(1)] : ['/bin/sh', ['-c', REOPEN_STDIO_SCRIPT, 'sh', String(stdioOfPid), ...command]];
      const result = await runCommand(file, argv, { timeoutMs: this.timeoutMs, ...runOptions });
      if (result.code !== 0) {
        const logText = await fs.readFile(log, 'utf8').catch(() => '');
        throw new RuncError(full, result.code, errorsFromRuncLog(logText) || 'no error output');
      }
    });
  }

  /**
   * `start` handing another process's standard I/O on as the container's: runsc gives a container
   * that joins a sandbox the stdio of `runsc start`. They are opened blocking, as the container
   * reads and writes them (a non-blocking pipe would hand it EAGAIN), by a shell, so that an open
   * that cannot finish ends with the call's time limit instead of holding one of our threads.
   */
  async startWithStdioOf(id: string, pid: number): Promise<void> {
    await this.runLogged(['start', id], { discardOutput: true, stdioOfPid: pid });
  }

  async start(id: string): Promise<void> {
    await this.run(['start', id]);
  }

  async state(id: string): Promise<RuncState> {
    const { stdout } = await this.run(['state', id], { timeoutMs: 10_000 });
    return JSON.parse(stdout) as RuncState;
  }

  /** The state, or undefined when runc does not know the container. */
  async stateIfExists(id: string): Promise<RuncState | undefined> {
    try {
      return await this.state(id);
    } catch (err) {
      if (err instanceof RuncError && err.notFound) return undefined;
      throw err;
    }
  }

  async list(): Promise<RuncState[]> {
    const { stdout } = await this.run(['list', '--format', 'json'], { timeoutMs: 10_000 });
    const parsed = JSON.parse(stdout || 'null') as RuncState[] | null;
    return parsed ?? [];
  }

  /** Sends a signal to the container's init (or, with all, every process in it). */
  async kill(id: string, signal: NodeJS.Signals | number = 'SIGTERM', options: { all?: boolean } = {}): Promise<void> {
    const args = ['kill'];
    if (options.all) args.push('--all');
    args.push(id, String(signal));
    await this.run(args, { timeoutMs: 10_000 });
  }

  /** Removes runc's record and the container's cgroup; succeeds when the container is already gone. */
  async delete(id: string, options: { force?: boolean } = {}): Promise<void> {
    try {
      await this.run(options.force ? ['delete', '--force', id] : ['delete', id]);
    } catch (err) {
      if (err instanceof RuncError && err.notFound) return;
      throw err;
    }
  }

  /** One `events --stats` reading of a container (runsc): its usage as the sandbox's kernel counts it. */
  async eventsStats(id: string): Promise<string> {
    const { stdout } = await this.run(['events', '--stats', id], { timeoutMs: 10_000 });
    return stdout;
  }

  /** The pids of a container's processes in the sandbox's kernel (runsc `ps --format json`: a JSON array). */
  async psJson(id: string): Promise<string> {
    const { stdout } = await this.run(['ps', '--format', 'json', id], { timeoutMs: 10_000 });
    return stdout;
  }

  /** Changes a running container's cgroup limits (`runc update --resources -`). */
  async update(id: string, resources: LinuxResources): Promise<void> {
    await this.run(['update', '--resources', '-', id], { input: JSON.stringify(resources) });
  }
}
