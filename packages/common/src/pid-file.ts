import { promises as fs } from 'node:fs';
import { getPriority } from 'node:os';
import { atomicWriteFile } from './atomic-file.js';

export async function writePidFile(path: string, pid = process.pid): Promise<void> {
  await atomicWriteFile(path, `${pid}\n`, 0o644);
}

export async function readPidFile(path: string): Promise<number | undefined> {
  try {
    const pid = Number.parseInt((await fs.readFile(path, 'utf8')).trim(), 10);
    return Number.isInteger(pid) && pid > 0 ? pid : undefined;
  } catch {
    return undefined;
  }
}

export async function removePidFile(path: string): Promise<void> {
  await fs.rm(path, { force: true });
}

/**
 * Whether a process with this pid exists (a zombie counts; so does a process of another user).
 * It asks getpriority(2) first: unlike kill(pid, 0) that needs no permission check and costs a
 * fraction as much, which counts in listings that ask about every container.
 */
export function isProcessAlive(pid: number): boolean {
  try {
    getPriority(pid);
    return true;
  } catch (err) {
    if ((err as { info?: { code?: unknown } }).info?.code === 'ESRCH') return false;
  }
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}
