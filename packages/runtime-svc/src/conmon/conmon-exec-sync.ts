import { promises as fs } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CommandTimeoutError, CONMON_PIPE_ENV, conmonEnvironment, parseConmonMessage, reassembleConmonLog, conmonRuntimeArgs, killSandboxedExec, runReportingCommand, type RuntimeBinary } from '@skiff/common';
import type { Process } from '../oci/runtime-spec.js';
import { DEFAULT_CONMON_PATH, ConmonError } from './conmon.js';
import { armExecDeadline } from './exec-deadline.js';

/** What conmon reports when it had to kill an exec that ran past its timeout. */
export const EXEC_TIMED_OUT_MESSAGE = 'command timed out';

export interface ExecSyncOptions {
  conmonPath?: string;
  runtime: RuntimeBinary;
  id: string;
  /** The process to run: args, env, cwd, user, capabilities as for the container. */
  process: Process;
  /** Seconds; 0 waits as long as the command runs. More than MAX_EXEC_TIMEOUT_SECONDS is taken as that. */
  timeoutSeconds: number;
  /** conmon's log of the output (both streams together, with its line prefixes) stops at about this many bytes. */
  maxOutputBytes?: number;
  /** Scratch directory for the process spec and the output log; a fresh temp dir by default. */
  workDir?: string;
  /** Aborted when the caller went away: the command is killed as at its timeout. */
  signal?: AbortSignal;
}

export interface ExecSyncResult {
  exitCode: number;
  stdout: string;
  stderr: string;
  /** The output exactly as the command wrote it (it need not be UTF-8). */
  stdoutBytes: Buffer;
  stderrBytes: Buffer;
  /** conmon's log reached maxOutputBytes: output after it may have been dropped. */
  outputCut: boolean;
  timedOut: boolean;
  /** The caller went away (`signal`): the command was killed, or never started. */
  abandoned: boolean;
}

type ExecOutput = Pick<ExecSyncResult, 'stdout' | 'stderr' | 'stdoutBytes' | 'stderrBytes' | 'outputCut'>;

async function readOutput(logFile: string, maxOutputBytes: number): Promise<ExecOutput> {
  const raw = await fs.readFile(logFile).catch(() => Buffer.alloc(0));
  const bytes = reassembleConmonLog(raw);
  // conmon writes no line once its log has reached the limit (the last one it wrote may pass it).
  const outputCut = raw.length >= maxOutputBytes;
  return { stdout: bytes.stdout.toString('utf8'), stderr: bytes.stderr.toString('utf8'), stdoutBytes: bytes.stdout, stderrBytes: bytes.stderr, outputCut };
}

const DEFAULT_MAX_OUTPUT = 16 * 1024 * 1024;

/** Node's timers hold at most 2^31-1 ms (about 24.8 days); a longer one fires at once. */
const MAX_TIMER_MS = 2 ** 31 - 1;

/** The backstop for a conmon that hangs comes this long after the exec's own timeout. */
const BACKSTOP_MARGIN_SECONDS = 30;

/** The longest timeout an exec is given, so that its timers fit Node's. */
export const MAX_EXEC_TIMEOUT_SECONDS = Math.floor(MAX_TIMER_MS / 1000) - BACKSTOP_MARGIN_SECONDS;

/** conmon's own timeout, the backstop for when this daemon dies mid-exec, comes this much later. */
const CONMON_TIMEOUT_MARGIN_SECONDS = 2;

/**
 * Runs a command in a running container and waits for it, through `conmon --exec --sync`.
 * At the timeout, or when the caller goes away, the command's process group is SIGKILLed (see
 * armExecDeadline). conmon stops reading output as soon as the command exits, so a background
 * process that keeps stdout open cannot make the call hang.
 */
export async function execSync(o: ExecSyncOptions): Promise<ExecSyncResult> {
  const timeoutSeconds = Math.min(o.timeoutSeconds, MAX_EXEC_TIMEOUT_SECONDS);
  const maxOutputBytes = o.maxOutputBytes ?? DEFAULT_MAX_OUTPUT;
  const empty = Buffer.alloc(0);
  if (o.signal?.aborted) return { exitCode: -1, stdout: '', stderr: '', stdoutBytes: empty, stderrBytes: empty, outputCut: false, timedOut: false, abandoned: true };
  const dir = await fs.mkdtemp(join(o.workDir ?? tmpdir(), 'skiff-exec-'));
  try {
    const processFile = join(dir, 'process.json');
    const logFile = join(dir, 'output.log');
    const pidFile = join(dir, 'pid');
    await fs.writeFile(processFile, JSON.stringify({ ...o.process, terminal: false }), { mode: 0o600 });
    const args = [
      '--cid', o.id,
      ...conmonRuntimeArgs(o.runtime),
      '--container-pidfile', pidFile,
      '--exec',
      '--exec-process-spec', processFile,
      '--log-path', `k8s-file:${logFile}`,
      '--log-global-size-max', String(maxOutputBytes),
      '--sync',
    ];
    if (timeoutSeconds > 0) args.push('--timeout', String(Math.ceil(timeoutSeconds) + CONMON_TIMEOUT_MARGIN_SECONDS));

    const runtime = o.runtime;
    // Backstop in case conmon itself hangs: its own timeout plus a margin, or a day.
    const backstopMs = timeoutSeconds > 0 ? (timeoutSeconds + BACKSTOP_MARGIN_SECONDS) * 1000 : 24 * 3600 * 1000;
    // With --sync conmon itself is the monitor: it reports the exit code on the sync pipe, then exits.
    const conmon = runReportingCommand(o.conmonPath ?? DEFAULT_CONMON_PATH, args, CONMON_PIPE_ENV.sync, { env: conmonEnvironment(), cwd: dir, timeoutMs: backstopMs });
    // Through a sandbox-kind runtime's launcher the command runs in the sandbox, out of reach of a host signal.
    const killInside = runtime.kind === 'sandbox' ? () => killSandboxedExec(runtime, o.id, pidFile) : undefined;
    const deadline = armExecDeadline(timeoutSeconds > 0 ? timeoutSeconds * 1000 : undefined, pidFile, processFile, conmon, killInside);
    const abandon = (): void => deadline.killNow();
    o.signal?.addEventListener('abort', abandon, { once: true });
    if (o.signal?.aborted) abandon();
    try {
      const result = await conmon.catch((err: unknown) => {
        if (err instanceof CommandTimeoutError) throw new ConmonError(`exec in ${o.id}: conmon reported no exit code within ${backstopMs} ms`);
        throw err;
      });
      const stderrText = result.stderr.trim();
      const sync = result.report === undefined ? undefined : parseConmonMessage(result.report);
      if (o.signal?.aborted) return { ...(await readOutput(logFile, maxOutputBytes)), exitCode: -1, timedOut: false, abandoned: true };
      if (!sync) throw new ConmonError(`exec in ${o.id}: conmon exited with ${result.code ?? result.signal} without an exit code${stderrText ? `: ${stderrText}` : ''}`);
      if (deadline.expired || (sync.value === -1 && sync.message === EXEC_TIMED_OUT_MESSAGE)) {
        const partial = await readOutput(logFile, maxOutputBytes);
        return { ...partial, exitCode: -1, stderr: partial.stderr || EXEC_TIMED_OUT_MESSAGE, timedOut: true, abandoned: false };
      }
      if (sync.value < 0) {
        throw new ConmonError(`exec in ${o.id} failed: ${sync.message?.trim() || stderrText || 'runc reported no error'}`);
      }
      return { ...(await readOutput(logFile, maxOutputBytes)), exitCode: sync.value, timedOut: false, abandoned: false };
    } finally {
      o.signal?.removeEventListener('abort', abandon);
      deadline.cancel();
    }
  } finally {
    await fs.rm(dir, { recursive: true, force: true });
  }
}
