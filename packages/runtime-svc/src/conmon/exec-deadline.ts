import { promises as fs } from 'node:fs';
import { readPidFile } from '@skiff/common';
import { setTimeout as sleep } from 'node:timers/promises';
import { readArgv, readProcStat } from '../process/processes.js';

/** How often the deadline looks again for a command that runc has not started yet. */
const PID_POLL_MS = 10;

/**
 * The longest start-up (conmon, `runc exec`) not counted against the timeout: the command is killed
 * this long after the timeout from the call's start at the latest, so the answer still comes
 * within about 2 s of the timeout.
 */
export const EXEC_START_ALLOWANCE_MS = 1_500;

export interface ExecDeadline {
  /** Whether the deadline passed and the command was (or is being) killed. */
  readonly expired: boolean;
  /** Kills the command now (as soon as it has started), as the deadline would: its caller went away. */
  killNow(): void;
  /** Disarms the deadline; the command finished first. */
  cancel(): void;
}

/**
 * Kills an exec'd command when its timeout has passed since the command started, to the
 * millisecond: conmon's and `runc exec`'s start-up (runc's init joining the container's namespaces
 * included), slow on a busy node, does not count against a probe's timeout (up to
 * EXEC_START_ALLOWANCE_MS of it), as containerd starts its clock once the process has started. The
 * start is when runc wrote the pid file, which it does once the command runs, so a late look at
 * the file does not lengthen the timeout. conmon's own
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
  const timers: NodeJS.Timeout[] = [];
  const expire = (): void => {
    if (expired || finished) return;
    expired = true;
    void killWhenStarted();
  };
  if (timeoutMs !== undefined) {
    timers.push(setTimeout(expire, timeoutMs + EXEC_START_ALLOWANCE_MS));
    void commandAgeMs(pidFile, () => finished || expired).then((age) => {
      if (age !== undefined) timers.push(setTimeout(expire, Math.max(0, timeoutMs - age)));
    });
  }

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
      for (const timer of timers) clearTimeout(timer);
      finished = true;
    },
  };
}

/**
 * How long ago runc started the command, once it has written the pid file (atomically, after the
 * start): the file's age. Undefined if `gaveUp` first.
 */
async function commandAgeMs(pidFile: string, gaveUp: () => boolean): Promise<number | undefined> {
  while (!gaveUp()) {
    const written = await fs.stat(pidFile).catch(() => undefined);
    if (written && (await readPidFile(pidFile)) !== undefined) return Math.max(0, Date.now() - written.mtimeMs);
    await sleep(PID_POLL_MS);
  }
  return undefined;
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
