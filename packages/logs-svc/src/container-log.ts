import { constants, promises as fs } from 'node:fs';
import { resolve } from 'node:path';
import type { SavedContainerLog } from './state-file.js';

/**
 * Directory levels above the file that must be real directories. The kubelet's layout is
 * <pod log dir>/<container>/<n>.log: the container's directory and the pod's own are in reach of
 * anything that can write to the pod log directories (a log shipper's hostPath mount, say), and a
 * symbolic link there would make root write wherever it points.
 */
export const CHECKED_DIRECTORY_LEVELS = 2;

export class UnsafeLogPath extends Error {}

/** A path inside the directory open as `fd`, resolved by the kernel from that very directory. */
function inDirectory(fd: number, name: string): string {
  return `/proc/self/fd/${fd}/${name}`;
}

/** Why opening `at` (shown as `path`) failed: a symbolic link or the wrong kind of file is refused by name. */
async function refusal(err: unknown, at: string, path: string, what: 'directory' | 'file'): Promise<Error> {
  const code = (err as NodeJS.ErrnoException).code;
  if (code !== 'ELOOP' && code !== 'ENOTDIR' && code !== 'ENXIO' && code !== 'EISDIR') return err as Error;
  const st = await fs.lstat(at).catch(() => undefined);
  if (st?.isSymbolicLink()) return new UnsafeLogPath(`refusing container log ${what} ${path}: it is a symbolic link`);
  return new UnsafeLogPath(`refusing container log ${what} ${path}: it is not a ${what === 'file' ? 'regular file' : 'directory'}`);
}

/**
 * Opens (creating what is missing) a container's log file to write to it, refusing a symbolic
 * link or anything but a regular file at the file and at the directory levels checked above it.
 * Each level is opened through the one above it, so nothing can be swapped in between.
 */
export async function openLogFile(path: string): Promise<fs.FileHandle> {
  const parts = resolve(path).split('/').filter(Boolean);
  const file = parts.pop();
  if (file === undefined) throw new UnsafeLogPath(`container log path ${path} names no file`);
  const checked = parts.splice(Math.max(0, parts.length - CHECKED_DIRECTORY_LEVELS));
  const top = `/${parts.join('/')}`;
  await fs.mkdir(top, { recursive: true, mode: 0o755 });
  let dir = await fs.open(top, constants.O_RDONLY | constants.O_DIRECTORY);
  let shown = top === '/' ? '' : top;
  try {
    for (const name of checked) {
      shown = `${shown}/${name}`;
      const at = inDirectory(dir.fd, name);
      await fs.mkdir(at, { mode: 0o755 }).catch((err: NodeJS.ErrnoException) => {
        if (err.code !== 'EEXIST') throw err;
      });
      const next = await fs.open(at, constants.O_RDONLY | constants.O_DIRECTORY | constants.O_NOFOLLOW).catch(async (err: unknown) => {
        throw await refusal(err, at, shown, 'directory');
      });
      await dir.close();
      dir = next;
    }
    shown = `${shown}/${file}`;
    // O_NONBLOCK: a FIFO put there fails at once (ENXIO) instead of blocking until a reader comes.
    const flags = constants.O_WRONLY | constants.O_CREAT | constants.O_NOFOLLOW | constants.O_NONBLOCK;
    const at = inDirectory(dir.fd, file);
    const handle = await fs.open(at, flags, 0o640).catch(async (err: unknown) => {
      throw await refusal(err, at, shown, 'file');
    });
    const st = await handle.stat();
    if (!st.isFile()) {
      await handle.close();
      throw new UnsafeLogPath(`refusing container log file ${shown}: it is not a regular file`);
    }
    return handle;
  } finally {
    await dir.close();
  }
}

/**
 * One container's CRI log file as logs-svc writes it: records wait in memory until the batch
 * they belong to is written, at the file's known end, and synced.
 */
export class ContainerLog {
  private pending: Buffer[] = [];
  private pendingLength = 0;
  /** Set when the container is forgotten: nothing more is written. */
  removed = false;

  private constructor(
    readonly id: string,
    public path: string,
    private handle: fs.FileHandle,
    public inode: number,
    public size: number,
  ) {}

  /** Opens (creating it if needed) the file at `path` to append to it; see `openLogFile`. */
  static async open(id: string, path: string): Promise<ContainerLog> {
    const handle = await openLogFile(path);
    const st = await handle.stat();
    return new ContainerLog(id, path, handle, st.ino, st.size);
  }

  /**
   * Reopens the file a previous run wrote: if it is still the same file, bytes past the saved size
   * (written after the saved cursor) are cut off, since those entries are read again. A different
   * or new file at the path is appended to.
   */
  static async resume(id: string, saved: SavedContainerLog): Promise<ContainerLog> {
    const log = await ContainerLog.open(id, saved.path);
    if (log.inode === saved.inode && log.size > saved.size) {
      await log.handle.truncate(saved.size);
      await log.handle.sync();
      log.size = saved.size;
    }
    return log;
  }

  add(records: Buffer[]): void {
    for (const r of records) {
      this.pending.push(r);
      this.pendingLength += r.length;
    }
  }

  get hasPending(): boolean {
    return this.pendingLength > 0;
  }

  /** Writes what is pending at the file's end; on an error nothing is dropped and a retry writes it again. */
  async writePending(): Promise<void> {
    if (this.pendingLength === 0) return;
    const data = this.pending.length === 1 ? this.pending[0]! : Buffer.concat(this.pending, this.pendingLength);
    let done = 0;
    try {
      while (done < data.length) {
        const { bytesWritten } = await this.handle.write(data, done, data.length - done, this.size + done);
        done += bytesWritten;
      }
    } catch (err) {
      // Bytes that made it are written again at the same place next time.
      this.pending = [data];
      throw err;
    }
    this.size += data.length;
    this.pending = [];
    this.pendingLength = 0;
  }

  async sync(): Promise<void> {
    await this.handle.sync();
  }

  /** Switches to a new file at `path` (after the old one was renamed away), appending to it. */
  async reopen(): Promise<void> {
    const next = await ContainerLog.open(this.id, this.path);
    await this.handle.close().catch(() => undefined);
    this.handle = next.handle;
    this.inode = next.inode;
    this.size = next.size;
  }

  async close(): Promise<void> {
    this.pending = [];
    this.pendingLength = 0;
    await this.handle.close().catch(() => undefined);
  }

  saved(): SavedContainerLog {
    return { path: this.path, inode: this.inode, size: this.size };
  }
}
