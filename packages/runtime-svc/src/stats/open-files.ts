import { promises as fs } from 'node:fs';

/** Open file descriptors of a set of processes, and how many of them are sockets. */
export interface OpenFiles {
  fileDescriptors: number;
  sockets: number;
}

/**
 * Counts the descriptors in each process's fd directory (streamed: a process may hold a great
 * many), a socket being a descriptor whose link reads "socket:[inode]". A process that is gone or
 * cannot be read counts nothing.
 */
export async function countOpenFiles(pids: readonly number[], procRoot = '/proc'): Promise<OpenFiles> {
  const out: OpenFiles = { fileDescriptors: 0, sockets: 0 };
  for (const pid of pids) {
    const fdDir = `${procRoot}/${pid}/fd`;
    const dir = await fs.opendir(fdDir).catch(() => undefined);
    if (!dir) continue;
    try {
      for await (const entry of dir) {
        out.fileDescriptors++;
        const target = await fs.readlink(`${fdDir}/${entry.name}`).catch(() => '');
        if (target.startsWith('socket:')) out.sockets++;
      }
    } catch {
      // The process ended while its descriptors were read: what was counted stays.
    }
  }
  return out;
}

/** The pids of a cgroup.procs file. */
export function parsePids(text: string | undefined): number[] {
  return (text ?? '').split('\n').filter((line) => /^\d+$/.test(line.trim())).map(Number);
}
