import { readProcStat } from '@skiff/common';

/** Gone, or a zombie not yet reaped: it runs no more and its files and sockets are closed. */
export function hasExited(pid: number): boolean {
  const state = readProcStat(pid)?.state;
  return state === undefined || state === 'Z';
}
