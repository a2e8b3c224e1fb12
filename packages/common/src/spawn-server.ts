import { spawn, type ChildProcessByStdio } from 'node:child_process';
import { accessSync, constants } from 'node:fs';
import { createInterface } from 'node:readline';
import type { Readable, Writable } from 'node:stream';
import { fileURLToPath } from 'node:url';
import type { CommandResult, RunCommandOptions } from './run-command.js';

const SPAWN_SERVER = fileURLToPath(new URL('../helpers/spawn-server.py', import.meta.url));
const PYTHON = '/usr/bin/python3';
const DEFAULT_IDLE_MS = 60_000;

interface Answer {
  id: number;
  code?: number | null;
  signal?: NodeJS.Signals | null;
  stdout?: string;
  stderr?: string;
  timedOut?: boolean;
  report?: string;
  done?: boolean;
  error?: string;
  errno?: string;
}

/**
 * A system call made by the helper: mount(2) or umount2(2) (the flags are the kernel's numbers,
 * MS_* and MNT_*), or one datagram (base64) sent to a unix datagram socket without waiting.
 */
export type SystemCall =
  | { call: 'mount'; source: string; target: string; fstype: string; flags: number; data: string }
  | { call: 'umount'; target: string; flags: number }
  | { call: 'send'; target: string; data: string };

/** What a system call hands back: done, or the errno's name and a message naming the call and its target. */
export type SystemCallOutcome = { done: true } | { error: string; errno: string };

/** What a finished request hands back: the command's result, or why it timed out or could not start. */
export type SpawnOutcome = { result: CommandResult } | { timedOut: true; stderr: string } | { spawnError: string; errno: string };

interface Pending {
  settle: (answer: Answer) => void;
  fail: (err: Error) => void;
}

/**
 * Runs commands through helpers/spawn-server.py, a small process that starts them with
 * vfork: Node's own spawn forks the whole daemon and holds its event loop until the child
 * has exec'd (several ms for a daemon of tens of MiB), so commands started together queue there.
 * The helper also makes the system calls Node has no API for: mount(2), umount2(2), a datagram send.
 * The helper is started on first use and again after it dies (the requests it had fail).
 */
export class SpawnServer {
  private helper: ChildProcessByStdio<Writable, Readable, null> | undefined;
  private readonly pending = new Map<number, Pending>();
  private nextId = 1;
  private idleTimer: NodeJS.Timeout | undefined;

  /** `idleMs`: a helper with nothing to do for this long ends (its ~9 MiB are not kept by an idle daemon). */
  constructor(
    private readonly onError: (message: string) => void = () => undefined,
    private readonly idleMs = DEFAULT_IDLE_MS,
  ) {}

  /** Whether the helper's interpreter is installed. */
  static available(): boolean {
    try {
      accessSync(PYTHON, constants.X_OK);
      return true;
    } catch {
      return false;
    }
  }

  /** The helper process now running, if one is. */
  get helperPid(): number | undefined {
    return this.helper?.pid;
  }

  async run(file: string, args: readonly string[], options: RunCommandOptions): Promise<SpawnOutcome> {
    return outcomeOf(await this.send(runRequest(file, args, options)));
  }

  /**
   * Runs a command that reports on a pipe whose descriptor it finds in the environment variable
   * `reportPipeEnv` (conmon's _OCI_SYNCPIPE): its outcome, and the first line written there
   * (undefined when it never reported). The answer waits for that line, within `timeoutMs`, even
   * after the command has exited: what it forked may report later.
   */
  async runReporting(file: string, args: readonly string[], options: RunCommandOptions, reportPipeEnv: string): Promise<{ outcome: SpawnOutcome; report: string | undefined }> {
    const answer = await this.send({ ...runRequest(file, args, options), reportPipe: reportPipeEnv });
    return { outcome: outcomeOf(answer), report: answer.report === undefined ? undefined : Buffer.from(answer.report, 'base64').toString('utf8') };
  }

  /** A system call, made by the helper (in this process's mount namespace). */
  async systemCall(call: SystemCall): Promise<SystemCallOutcome> {
    const answer = await this.send(call);
    if (answer.done === true) return { done: true };
    return { error: answer.error ?? `${call.call} ${call.target}: no answer`, errno: answer.errno ?? 'EIO' };
  }

  private send(request: object): Promise<Answer> {
    clearTimeout(this.idleTimer);
    const helper = this.running();
    const id = this.nextId++;
    return new Promise<Answer>((resolve, reject) => {
      this.pending.set(id, { settle: resolve, fail: reject });
      if (this.pending.size === 1) this.hold(helper, true);
      helper.stdin.write(`${JSON.stringify({ ...request, id })}\n`);
    });
  }

  /** Starts the helper now, if it is not running, for the requests to come. */
  warm(): void {
    if (this.helper) return;
    this.endWhenIdle(this.running());
  }

  /** Stops the helper; commands it started run on. */
  close(): void {
    clearTimeout(this.idleTimer);
    this.helper?.stdin.end();
    this.helper = undefined;
  }

  private endWhenIdle(helper: ChildProcessByStdio<Writable, Readable, null>): void {
    clearTimeout(this.idleTimer);
    this.idleTimer = setTimeout(() => {
      if (this.helper !== helper || this.pending.size > 0) return;
      // Forgotten first: its exit is then no loss to report.
      this.helper = undefined;
      helper.stdin.end();
    }, this.idleMs);
    this.idleTimer.unref();
  }

  /** Keeps the event loop alive while requests are pending, and only then. */
  private hold(helper: ChildProcessByStdio<Writable, Readable, null>, on: boolean): void {
    const handles = [helper, helper.stdout as unknown, helper.stdin as unknown] as { ref?: () => void; unref?: () => void }[];
    for (const handle of handles) (on ? handle.ref : handle.unref)?.call(handle);
  }

  private running(): ChildProcessByStdio<Writable, Readable, null> {
    if (this.helper) return this.helper;
    const helper = spawn(PYTHON, [SPAWN_SERVER], { stdio: ['pipe', 'pipe', 'inherit'] });
    const lost = (why: string): void => {
      if (this.helper !== helper) return;
      this.helper = undefined;
      const failed = [...this.pending.values()];
      this.pending.clear();
      for (const request of failed) request.fail(new Error(`the command helper ${SPAWN_SERVER} ${why}`));
      this.onError(`the command helper ${why}; it is started again for the next command`);
    };
    helper.stdin.on('error', () => undefined);
    helper.on('error', (err) => lost(`failed: ${err.message}`));
    helper.on('exit', (code, signal) => lost(`ended (${signal ?? `exit ${code}`})`));
    createInterface({ input: helper.stdout }).on('line', (line) => {
      let answer: Answer;
      try {
        answer = JSON.parse(line) as Answer;
      } catch {
        return;
      }
      const request = this.pending.get(answer.id);
      if (!request) return;
      this.pending.delete(answer.id);
      if (this.pending.size === 0 && this.helper === helper) {
        this.hold(helper, false);
        this.endWhenIdle(helper);
      }
      request.settle(answer);
    });
    this.hold(helper, false);
    this.helper = helper;
    return helper;
  }
}

function runRequest(file: string, args: readonly string[], options: RunCommandOptions): object {
  return {
    file,
    args,
    env: options.env ?? process.env,
    cwd: options.cwd ?? null,
    input: options.input === undefined ? null : Buffer.from(options.input).toString('base64'),
    timeoutMs: options.timeoutMs ?? 0,
    drainMs: options.drainAfterExitMs ?? 250,
    discardOutput: options.discardOutput === true,
  };
}

function outcomeOf(answer: Answer): SpawnOutcome {
  if (answer.error !== undefined) return { spawnError: answer.error, errno: answer.errno ?? 'EIO' };
  const stderr = Buffer.from(answer.stderr ?? '', 'base64').toString('utf8');
  if (answer.timedOut) return { timedOut: true, stderr };
  return { result: { code: answer.code ?? null, signal: answer.signal ?? null, stdout: Buffer.from(answer.stdout ?? '', 'base64').toString('utf8'), stderr } };
}
