import { getPriority } from 'node:os';
import { isProcessAlive } from '@skiff/common';

/**
 * Whether a process with this pid exists, with the answers of isProcessAlive (a zombie counts; so
 * does a process of another user). It asks getpriority(2) instead of kill(pid, 0): that needs no
 * permission check and costs a fraction as much, which counts in listings that ask about every
 * container.
 */
export function processExists(pid: number): boolean {
  try {
    getPriority(pid);
    return true;
  } catch (err) {
    if ((err as { info?: { code?: unknown } }).info?.code === 'ESRCH') return false;
    return isProcessAlive(pid);
  }
}
