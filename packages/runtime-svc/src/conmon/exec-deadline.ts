import { readPidFile } from '@skiff/common';
import { setTimeout as sleep } from 'node:timers/promises';
import { readArgv, readProcStat } from '../process/processes.js';

/** How often the deadline looks again for a command that runc has not started yet. */
const PID_POLL_MS = 20;

export interface ExecDeadline {
  /** Whether the deadline passed and the command was (or is being) killed. */
  readonly expired: boolean;
  /** Kills the command now (as soon as it has started), as the deadline would: its caller went away. */
  killNow(): void;
  /** Disarms the deadline; the command finished first. */
  cancel(): void;
}

/**
 * Kills an exec'd command when its timeout has passed, to the millisecond. conmon's own
 * `--timeout` rounds to glib's whole-second ticks and can fire a quarter of a second early,
 * so it is only the backstop for when this daemon is gone.
 *
 * The command is found through the pid file runc writes, and is killed only as the child of
 * this exec's conmon (the one given `processSpec`, a file of this exec's own), so a recycled pid
 * is never hit. runc makes the command the leader of its own session; then its whole process
 * group is killed, as conmon does, so background children go with it. `killInside` ends a
 * command that runs in a runsc sandbox. Without `timeoutMs` only killNow kills.
 */
export function armExecDeadline(
  timeoutMs: number | undefined,
  pidFile: string,
  processSpec: string,
  conmonDone: Promise<unknown>,
  killInside?: () => Promise<unknown>,
): ExecDeadline {
  let expired = false;
  let finished = false;
  conmonDone.then(
    () => (finished = true),
    () => (finished = true),
  );
  let killing = false;
  const timer =
    timeoutMs === undefined
      ? undefined
      : setTimeout(() => {
          expired = true;
          void killWhenStarted();
        }, timeoutMs);

  async function killWhenStarted(): Promise<void> {
    if (killing) return;
    killing = true;
    while (!finished) {
      const pid = await readPidFile(pidFile);
      // Until `runc exec` has exited, the command's parent is runc; conmon adopts it after.
      const stat = pid === undefined ? undefined : readProcStat(pid);
      if (pid !== undefined && stat && (await isExecMonitor(stat.ppid, processSpec))) {
        killCommand(pid, stat.pgid);
        await killInside?.().catch(() => undefined);
        return;
      }
      await sleep(PID_POLL_MS);
    }
  }

  return {
    get expired() {
      return expired;
    },
    killNow() {
      void killWhenStarted();
    },
    cancel() {
      clearTimeout(timer);
      finished = true;
    },
  };
}

/** Whether `pid` is the conmon running the exec whose process spec is `processSpec`. */
async function isExecMonitor(pid: number, processSpec: string): Promise<boolean> {
  const argv = (await readArgv(pid)) ?? [];
  return argv.includes('--exec-process-spec') && argv[argv.indexOf('--exec-process-spec') + 1] === processSpec;
}

function killCommand(pid: number, pgid: number): void {
  try {
    process.kill(pgid === pid ? -pid : pid, 'SIGKILL');
  } catch {
    // It exited on its own meanwhile.
  }
}
