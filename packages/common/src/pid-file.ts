import { promises as fs } from 'node:fs';
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

export function isProcessAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}
