import type { ChildProcess } from 'node:child_process';
import { killSandboxedExec, readProcStat, type RuntimeBinary } from '@skiff/common/core';

/**
 * SIGKILLs the process an exec started (`pid`, from runc's pid file or conmon's message), with
 * its whole process group when it leads one (a terminal session does). Answers whether it was
 * signalled.
 *
 * A pid alone may by now name another process, so it is signalled only while it is still a
 * child of `parent` (the runc or conmon we spawned and still hold: both stay the exec'd process's
 * parent, as subreapers) and `parent` has not exited: a live parent has not reaped the child, so
 * its pid cannot have been reused.
 */
export function killExecProcess(pid: number, parent: ChildProcess): boolean {
  if (parent.pid === undefined || parent.exitCode !== null || parent.signalCode !== null) return false;
  const stat = readProcStat(pid);
  if (!stat || stat.ppid !== parent.pid) return false;
  try {
    process.kill(stat.pgid === pid ? -pid : pid, 'SIGKILL');
    return true;
  } catch {
    return false; // ended meanwhile
  }
}

/**
 * A command run through a sandbox-kind runtime's launcher (runsc) runs in the sandbox, out of reach
 * of a host signal: it is killed there, through the pid the launcher noted beside `pidFile`.
 */
export function killInSandbox(runtime: RuntimeBinary, containerId: string, pidFile: string): void {
  if (runtime.kind === 'sandbox') void killSandboxedExec(runtime, containerId, pidFile).catch(() => undefined);
}
