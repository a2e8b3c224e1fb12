import { readdirSync, readFileSync } from 'node:fs';

/** The pids of a process's direct children. */
export function childrenOf(pid: number): number[] {
  return readdirSync(`/proc/${pid}/task`).flatMap((tid) =>
    readFileSync(`/proc/${pid}/task/${tid}/children`, 'utf8')
      .split(' ')
      .filter(Boolean)
      .map(Number),
  );
}
