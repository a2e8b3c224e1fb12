import { readFileSync } from 'node:fs';

/** What /proc/<pid>/stat says about a process. */
export interface ProcStat {
  /** One letter: R running, S sleeping, Z zombie, X dead, ... */
  state: string;
  ppid: number;
  /** Process group id. */
  pgid: number;
  /** Start time in clock ticks since boot: with the pid, it names one process for good. */
  startTime: number;
}

/** Fields of /proc/<pid>/stat; the command name may hold spaces and parentheses, so fields are read after the last ')'. */
export function parseProcStat(text: string): ProcStat | undefined {
  const end = text.lastIndexOf(')');
  if (end < 0) return undefined;
  // After ')': state(3) ppid(4) pgrp(5) … starttime(22); index 0 here is field 3.
  const fields = text.slice(end + 2).split(' ');
  const state = fields[0] ?? '';
  const ppid = Number(fields[1]);
  const pgid = Number(fields[2]);
  const startTime = Number(fields[19]);
  if (!state || ![ppid, pgid, startTime].every(Number.isInteger)) return undefined;
  return { state, ppid, pgid, startTime };
}

/**
 * State, parent, group and start time of a process, or undefined when it does not exist. A
 * synchronous read: /proc answers from memory, and callers ask once per process where a round
 * trip through the thread pool would cost more than the read itself.
 */
export function readProcStat(pid: number): ProcStat | undefined {
  try {
    return parseProcStat(readFileSync(`/proc/${pid}/stat`, 'utf8'));
  } catch {
    return undefined;
  }
}
