import { promises as fs } from 'node:fs';
import { openLogFile } from '@skiff/common/core';
import type { JournalPosition } from './journal-position.js';
import type { SavedContainerLog } from './state-file.js';

/** A file and the size it had written at some moment. */
export interface WrittenMark {
  inode: number;
  size: number;
}

/**
 * One container's CRI log file as logs-svc writes it: records wait in memory until the batch
 * they belong to is written, at the file's known end; later the file is synced and the size it
 * had then is saved (`durableSize`, what a restart cuts the file back to).
 */
export class ContainerLog {
  private pending: Buffer[] = [];
  private pendingLength = 0;
  /** Set when the container is forgotten: nothing more is written. */
  removed = false;
  /** Its output up to here is still to be read back from the journal (see LogEngine.readBack). */
  readBackUntil: JournalPosition | undefined;
  /** The size saved with the journal position: bytes past it belong to later entries, or to none yet. */
  private durableSize: number;

  private constructor(
    readonly id: string,
    public path: string,
    private handle: fs.FileHandle,
    public inode: number,
    public size: number,
  ) {
    this.durableSize = size;
  }

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
      log.durableSize = saved.size;
    }
    log.readBackUntil = saved.readBackUntil;
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

  get pendingBytes(): number {
    return this.pendingLength;
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
    this.durableSize = next.size;
  }

  /** Where the file's written bytes end now: what `markDurable` takes once the file is synced. */
  writtenMark(): WrittenMark {
    return { inode: this.inode, size: this.size };
  }

  /** The bytes up to `mark` are synced; a mark of a file since switched (reopen) says nothing of this one. */
  markDurable(mark: WrittenMark): void {
    if (mark.inode === this.inode && mark.size > this.durableSize) this.durableSize = mark.size;
  }

  async close(): Promise<void> {
    this.pending = [];
    this.pendingLength = 0;
    await this.handle.close().catch(() => undefined);
  }

  saved(): SavedContainerLog {
    return { path: this.path, inode: this.inode, size: this.durableSize, ...(this.readBackUntil ? { readBackUntil: this.readBackUntil } : {}) };
  }
}
