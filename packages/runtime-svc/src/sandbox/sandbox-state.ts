import { isProcessAlive } from '@skiff/common';
import { readExitCode } from '../conmon/exit-file.js';
import type { RuntimeContext } from '../daemon/context.js';
import type { SandboxRecord } from '../state/records.js';
import { isSameProcessRunning } from '../process/processes.js';

/**
 * Whether the sandbox's pause process is alive: the same process that was started (not a zombie,
 * not another process that got its pid). Records written before the start time was kept can only
 * be checked by pid.
 */
export async function pauseProcessRunning(rec: Pick<SandboxRecord, 'pid' | 'pidStartTime'>): Promise<boolean> {
  if (rec.pid === undefined) return false;
  if (rec.pidStartTime === undefined) return isProcessAlive(rec.pid);
  return isSameProcessRunning(rec.pid, rec.pidStartTime);
}

/**
 * Ready while the sandbox was started and not stopped, and its PID 1 has not exited. A pod
 * without a pause is ready until it is stopped, unless its namespaces were gone when the runtime
 * started again (a reboot: recovery/recover.ts).
 * `exitFiles`, the names in the exit directory read once by a listing, spares a read per sandbox;
 * only pause processes started under conmon (by earlier versions) have exit files.
 */
export async function sandboxIsReady(ctx: RuntimeContext, rec: SandboxRecord, exitFiles?: ReadonlySet<string>): Promise<boolean> {
  if (rec.pauseless) return rec.phase === 'ready' && !rec.namespacesLost;
  if (rec.phase !== 'ready' || rec.pid === undefined) return false;
  if (rec.conmonPid !== undefined) {
    if (exitFiles ? exitFiles.has(rec.id) : (await readExitCode(ctx.paths.exitDir, rec.id).catch(() => undefined)) !== undefined) return false;
  }
  return pauseProcessRunning(rec);
}
