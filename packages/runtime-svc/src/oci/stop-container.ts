import { waitForExitCode } from '../conmon/exit-file.js';
import { RuncError, type Runc } from './runc.js';

export interface StopOptions {
  /** conmon's --exit-dir: the exit file there is how we learn the container ended. */
  exitDir: string;
  /** Grace period after the stop signal before SIGKILL; 0 kills at once. */
  timeoutMs: number;
  /** The image's STOPSIGNAL (name or number); SIGTERM by default. */
  signal?: NodeJS.Signals | number;
  /** How long to wait for the exit file after SIGKILL before giving up. */
  killWaitMs?: number;
}

export class StopTimeoutError extends Error {
  constructor(id: string, waitedMs: number) {
    super(`container ${id} did not exit within ${waitedMs} ms of SIGKILL; its process may be stuck in the kernel (D state)`);
    this.name = 'StopTimeoutError';
  }
}

async function killIgnoringStopped(runc: Runc, id: string, signal: NodeJS.Signals | number, all: boolean): Promise<void> {
  try {
    await runc.kill(id, signal, { all });
  } catch (err) {
    if (err instanceof RuncError && (err.notRunning || err.notFound)) return;
    throw err;
  }
}

/**
 * Stops a conmon-monitored container: the stop signal, then SIGKILL to every process in it once
 * the grace period runs out. Resolves with the exit code conmon recorded.
 */
export async function stopContainer(runc: Runc, id: string, options: StopOptions): Promise<number> {
  const already = await waitForExitCode(options.exitDir, id, 0);
  if (already !== undefined) return already;
  if (options.timeoutMs > 0) {
    await killIgnoringStopped(runc, id, options.signal ?? 'SIGTERM', false);
    const code = await waitForExitCode(options.exitDir, id, options.timeoutMs);
    if (code !== undefined) return code;
  }
  // --all reaches processes that joined the container's cgroup but are not its init's children.
  await killIgnoringStopped(runc, id, 'SIGKILL', true);
  const killWaitMs = options.killWaitMs ?? 10_000;
  const code = await waitForExitCode(options.exitDir, id, killWaitMs);
  if (code === undefined) throw new StopTimeoutError(id, killWaitMs);
  return code;
}
