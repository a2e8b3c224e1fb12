import { setTimeout as sleep } from 'node:timers/promises';
import { isProcessAlive } from '@skiff/common';
import { exitFilePath, readExitCode, wasOomKilled } from '../conmon/exit-file.js';
import type { RuntimeContext } from '../daemon/context.js';
import type { ContainerRecord } from '../state/records.js';
import { fileMtimeNanos, nowNanos } from '../util/time.js';

/** Exit code recorded when a container ended without anyone left to see how. */
export const UNKNOWN_EXIT_CODE = 255;

/** The Kubernetes reason for an exit: OOMKilled, Completed (exit 0) or Error. */
export function exitReason(exitCode: number, oomKilled: boolean): string {
  if (oomKilled) return 'OOMKilled';
  return exitCode === 0 ? 'Completed' : 'Error';
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

/**
 * Brings a created or running container's record up to date with what conmon saw: once the exit
 * file is there the container has exited, with that code. A container whose process is gone
 * with no exit file (its conmon was killed too) is taken as exited with an unknown code.
 * Saves the record when it changed. Safe without the container's lock: the change is decided
 * and made in one step after the last read, and record writes keep their order.
 */
export async function refreshContainer(ctx: RuntimeContext, rec: ContainerRecord): Promise<ContainerRecord> {
  if (rec.phase !== 'created' && rec.phase !== 'running') return rec;
  let exit = await recordedExit(ctx, rec);
  let message: string | undefined;
  if (!exit && rec.pid !== undefined && !isProcessAlive(rec.pid)) {
    // conmon writes the file right after reaping the process; give it a moment.
    await sleep(200);
    exit = await recordedExit(ctx, rec);
    if (!exit) {
      message = 'the container process is gone and its monitor recorded no exit code';
      exit = { code: UNKNOWN_EXIT_CODE, at: nowNanos() };
    }
  }
  if (!exit) return rec;
  const oom = await wasOomKilled(ctx.paths.container(rec.id).persist);
  // Refreshes run unlocked (listing must not wait for a stop's grace period): another one may
  // have recorded the exit, or a removal begun, while this one was reading.
  if (rec.phase !== 'created' && rec.phase !== 'running') return rec;
  rec.phase = 'exited';
  rec.exitCode = exit.code;
  rec.finishedAt = exit.at;
  rec.reason = exitReason(exit.code, oom);
  if (message) rec.message = message;
  await ctx.records.saveContainer(rec);
  return rec;
}
