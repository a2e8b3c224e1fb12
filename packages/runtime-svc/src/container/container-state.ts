import { setTimeout as sleep } from 'node:timers/promises';
import { errorMessage, isProcessAlive } from '@skiff/common';
import { exitFilePath, readExitCode, wasOomKilled } from '../conmon/exit-file.js';
import type { RuntimeContext } from '../daemon/context.js';
import type { ContainerRecord } from '../state/records.js';
import { flushContainerLog } from '../logs/logs-client.js';
import { isRunningState, readProcess } from '../process/processes.js';
import { sandboxOomKilled } from '../stats/sandbox-oom.js';
import { sandboxHandler } from '../daemon/runtime-handlers.js';
import { fileMtimeNanos, nowNanos } from '../util/time.js';

/** Longest time an exit stays unreported while logs-svc catches up with the container's output. */
const LOG_FLUSH_LIMIT_NANOS = 60_000_000_000n;

/** Exit code recorded when a container ended without anyone left to see how. */
export const UNKNOWN_EXIT_CODE = 255;

/** The Kubernetes reason for an exit: OOMKilled, Completed (exit 0) or Error. */
export function exitReason(exitCode: number, oomKilled: boolean): string {
  if (oomKilled) return 'OOMKilled';
  return exitCode === 0 ? 'Completed' : 'Error';
}

/** Records the container as exited now, with `exitCode`, `reason` and `message`; the caller saves the record. */
export function markExited(rec: ContainerRecord, exitCode: number, reason: string, message: string): void {
  rec.phase = 'exited';
  rec.exitCode = exitCode;
  rec.finishedAt = nowNanos();
  rec.reason = reason;
  rec.message = message;
}

/** The exit code conmon recorded (exit dir first, the container's persist dir as fallback), with when. */
async function recordedExit(ctx: RuntimeContext, rec: ContainerRecord): Promise<{ code: number; at: string } | undefined> {
  const persist = ctx.paths.container(rec.id).persist;
  for (const [dir, name] of [
    [ctx.paths.exitDir, rec.id],
    [persist, 'exit'],
  ] as const) {
    const code = await readExitCode(dir, name).catch(() => undefined);
    if (code !== undefined) return { code, at: (await fileMtimeNanos(exitFilePath(dir, name))) ?? nowNanos() };
  }
  return undefined;
}

/** Whether the container's monitor is still running (a zombie is not). */
async function monitorRunning(pid: number): Promise<boolean> {
  const monitor = await readProcess(pid);
  return monitor !== undefined && isRunningState(monitor.state) && monitor.argv[0]?.endsWith('conmon') === true;
}

/**
 * Brings a created or running container's record up to date with what conmon saw: once the exit
 * file is there the container has exited, with that code. A container whose process is gone
 * with no exit file (its conmon was killed too) is taken as exited with an unknown code.
 * Saves the record when it changed. `neverRan`: the caller killed the container before it was
 * ever started, so it printed nothing and there is no log to wait for. Safe without the container's lock: the change is decided
 * and made in one step after the last read, and record writes keep their order.
 */
export async function refreshContainer(ctx: RuntimeContext, rec: ContainerRecord, options: { neverRan?: boolean } = {}): Promise<ContainerRecord> {
  if (rec.phase !== 'created' && rec.phase !== 'running') return rec;
  let exit = await recordedExit(ctx, rec);
  let message: string | undefined;
  if (!exit && rec.pid !== undefined && !isProcessAlive(rec.pid)) {
    // conmon sends the output left in the pipes before it writes the exit file, which can take a
    // while after a burst of output: as long as it runs, the exit is its to record.
    if (rec.conmonPid !== undefined && (await monitorRunning(rec.conmonPid))) return rec;
    // conmon writes the file right after reaping the process; give it a moment.
    await sleep(200);
    exit = await recordedExit(ctx, rec);
    if (!exit) {
      message = 'the container process is gone and its monitor recorded no exit code';
      exit = { code: UNKNOWN_EXIT_CODE, at: nowNanos() };
    }
  }
  if (!exit) return rec;
  // conmon creates the OOM file before it writes the exit file, so the reason is known now.
  const oom = (await wasOomKilled(ctx.paths.container(rec.id).persist)) || (exit.code !== 0 && (await sandboxOomKilled(ctx, rec)));
  const reason = exitReason(exit.code, oom);
  // The event stream hears of the exit at once; the record waits for the log below.
  ctx.events.containerExited(rec, { exitCode: exit.code, finishedAt: exit.at, reason, ...(message ? { message } : {}) });
  // Before the record (ContainerStatus, ListContainers) says it exited, its last lines must be in
  // its log file. While logs-svc is behind the journal, starting or being restarted, the exit is
  // not recorded yet (a later refresh asks again), up to a limit: a logs-svc that is stuck does
  // not hide an exit for longer, and one that is not running at all does not hold it back.
  if (rec.logPath && ctx.journald && !options.neverRan) {
    const flushed = await flushContainerLog(ctx, rec.id, rec.logPath);
    if (flushed === 'behind' && BigInt(nowNanos()) - BigInt(exit.at) < LOG_FLUSH_LIMIT_NANOS) return rec;
    if (flushed === 'behind') ctx.log.warn({ container: rec.id }, 'logs-svc is still behind the journal; reporting the exit without waiting longer');
  }
  // Refreshes run unlocked (listing must not wait for a stop's grace period): another one may
  // have recorded the exit, or a removal begun, while this one was reading.
  if (rec.phase !== 'created' && rec.phase !== 'running') return rec;
  const wasRunning = rec.phase === 'running';
  rec.phase = 'exited';
  rec.exitCode = exit.code;
  rec.finishedAt = exit.at;
  rec.reason = reason;
  if (message) rec.message = message;
  // Streamed as the phase changes, before the write lets a removal (under the lock this refresh
  // does not hold) stream the deletion: never a stop after the deletion. NRI plugins hear of every
  // stop of a running container once, whether StopContainer or the container itself ended it, as
  // upstream runtimes tell them; queued now, so that a RemoveContainer comes after it.
  ctx.events.container(rec, 'CONTAINER_STOPPED_EVENT');
  const sandbox = ctx.state.sandboxes.get(rec.sandboxId);
  const nriStop = wasRunning && sandbox && ctx.nri?.active ? ctx.nri.notifyContainer('StopContainer', sandbox, rec) : undefined;
  await ctx.records.saveContainer(rec);
  ctx.exitWatch.exitRecorded(rec.id);
  endInSandbox(ctx, rec);
  // The stop has happened: a plugin's failure to hear of it fails none of the calls that refresh.
  await nriStop?.catch((err: unknown) => ctx.log.warn({ container: rec.id, err: errorMessage(err) }, 'relaying StopContainer to NRI plugins failed'));
  return rec;
}

/**
 * What conmon watches of a container in a runsc sandbox is a host process standing in for it (see
 * sandboxed-start.ts); if that was killed from outside, the container itself may still run in the
 * sandbox. An exit, once recorded, is made true.
 */
function endInSandbox(ctx: RuntimeContext, rec: ContainerRecord): void {
  void sandboxHandler(ctx.handlers, rec.runtimeHandler)?.runc.kill(rec.id, 'SIGKILL', { all: true }).catch(() => undefined);
}

/**
 * The container as status calls report it: from memory while the exit watcher vouches for it and
 * its process is alive or it has none yet (no file read); otherwise brought up to date as
 * refreshContainer does.
 */
export async function currentContainer(ctx: RuntimeContext, rec: ContainerRecord): Promise<ContainerRecord> {
  if ((rec.phase === 'created' || rec.phase === 'running') && rec.pid !== undefined && ctx.exitWatch.current(rec.id) && isProcessAlive(rec.pid)) return rec;
  // Not started: there is no process that could have exited.
  if (rec.phase === 'created' && rec.pid === undefined && ctx.exitWatch.current(rec.id)) return rec;
  return refreshContainer(ctx, rec);
}
