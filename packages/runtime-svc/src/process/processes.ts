import { promises as fs } from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';
import { parseProcStat, readProcStat, type ProcStat } from '@skiff/common';

export interface ProcessInfo extends ProcStat {
  pid: number;
  argv: string[];
}

export { parseProcStat, readProcStat };

/** A process's command line, split into its arguments; undefined once the process is gone. */
export async function readArgv(pid: number | string): Promise<string[] | undefined> {
  try {
    const argv = (await fs.readFile(`/proc/${pid}/cmdline`, 'utf8')).split('\0');
    if (argv.at(-1) === '') argv.pop();
    return argv;
  } catch {
    return undefined;
  }
}

/** Whether a process in this /proc state still runs: a zombie (Z) or dead (X) one has ended. */
export function isRunningState(state: string): boolean {
  return state !== 'Z' && state !== 'X';
}

/** Whether `pid` still runs and is the process that started at `startTime` (not one that got its pid since). */
export function isSameProcessRunning(pid: number, startTime: number): boolean {
  const stat = readProcStat(pid);
  return stat !== undefined && isRunningState(stat.state) && stat.startTime === startTime;
}

/**
 * Signals the process `pid` started at `startTime`, if it still runs; never a process that got
 * its pid since (then, as when it has ended, nothing is done).
 */
export function signalSameProcess(pid: number, startTime: number, signal: NodeJS.Signals | number): void {
  if (!isSameProcessRunning(pid, startTime)) return;
  try {
    process.kill(pid, signal);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ESRCH') throw err;
  }
}

/** `argv`, when the caller has read it already, spares a second read of the command line. */
export async function readProcess(pid: number, argv?: string[]): Promise<ProcessInfo | undefined> {
  try {
    const stat = parseProcStat(await fs.readFile(`/proc/${pid}/stat`, 'utf8'));
    const args = argv ?? (await readArgv(pid));
    if (!stat || !args) return undefined;
    return { pid, ...stat, argv: args };
  } catch {
    return undefined;
  }
}

/**
 * Every live process the predicate accepts (a snapshot of /proc; processes come and go meanwhile).
 * `argvFilter`, when given, is applied first, so only the processes it passes have their stat read.
 */
export async function findProcesses(accept: (p: ProcessInfo) => boolean, argvFilter?: (argv: string[]) => boolean): Promise<ProcessInfo[]> {
  const found: ProcessInfo[] = [];
  for (const name of await fs.readdir('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    let argv: string[] | undefined;
    if (argvFilter) {
      argv = await readArgv(name);
      if (!argv || !argvFilter(argv)) continue;
    }
    const info = await readProcess(Number(name), argv);
    if (info && accept(info)) found.push(info);
  }
  return found;
}

/** The processes still there: the same pid with the same start time (a zombie counts). */
function stillAlive(processes: readonly ProcessInfo[]): ProcessInfo[] {
  return processes.filter((p) => readProcStat(p.pid)?.startTime === p.startTime);
}

async function waitUntilGone(processes: readonly ProcessInfo[], ms: number): Promise<ProcessInfo[]> {
  const deadline = performance.now() + ms;
  let alive = stillAlive(processes);
  while (alive.length > 0 && performance.now() < deadline) {
    await sleep(20);
    alive = stillAlive(alive);
  }
  return alive;
}

/**
 * Waits for the processes to exit on their own; those still there after `graceMs` get SIGKILL.
 * Resolves with the number that had to be killed.
 */
export async function awaitProcessesExit(processes: readonly ProcessInfo[], graceMs: number): Promise<number> {
  const stubborn = await waitUntilGone(processes, graceMs);
  for (const p of stubborn) {
    try {
      process.kill(p.pid, 'SIGKILL');
    } catch {
      // gone meanwhile
    }
  }
  await waitUntilGone(stubborn, 2000);
  return stubborn.length;
}
