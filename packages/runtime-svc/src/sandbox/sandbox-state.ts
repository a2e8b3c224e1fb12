import { isProcessAlive } from '@skiff/common';
import { readExitCode } from '../conmon/exit-file.js';
import type { RuntimeContext } from '../daemon/context.js';
import type { SandboxRecord } from '../state/records.js';

/**
 * Ready while the sandbox was started and not stopped, and its PID 1 has not exited.
 * `exitFiles`, the names in the exit directory read once by a listing, spares a read per sandbox.
 */
export async function sandboxIsReady(ctx: RuntimeContext, rec: SandboxRecord, exitFiles?: ReadonlySet<string>): Promise<boolean> {
  if (rec.phase !== 'ready' || rec.pid === undefined) return false;
  if (exitFiles ? exitFiles.has(rec.id) : (await readExitCode(ctx.paths.exitDir, rec.id).catch(() => undefined)) !== undefined) return false;
  return isProcessAlive(rec.pid);
}
