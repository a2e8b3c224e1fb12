import { fdatasync } from 'node:fs';
import { promisify } from 'node:util';

const fdatasyncAsync = promisify(fdatasync);

/** Files waiting for their turn at most; further ones are closed at once and left to the sync before the record. */
const MAX_WAITING = 64;
/**
 * Smaller files are closed at once and left to the sync before the record: written out on their
 * own they would only add a disk round trip to a small pull (busybox's), with nothing to overlap.
 */
export const EARLY_WRITEBACK_MIN_BYTES = 4 * 1024 * 1024;

/**
 * Starts writing finished files to disk while a pull goes on, so the one sync of the store's
 * filesystem before the image record (see DurabilityBatch) finds little left to write instead of
 * every byte of the pull. Nothing waits for it and nothing relies on it: the sync before the record
 * is still what makes content durable. One fdatasync at a time, since each holds a thread-pool
 * thread for as long as the disk takes, and the unpack needs the others.
 */
export class EarlyWriteback {
  private chain: Promise<void> = Promise.resolve();
  private waiting = 0;

  /** Whether a file of `bytes` bytes is worth handing over (smaller ones are better closed by their owner). */
  takes(bytes: number): boolean {
    return bytes >= EARLY_WRITEBACK_MIN_BYTES;
  }

  /**
   * Takes over `fd` of a file of `bytes` bytes whose writes have all completed: its data is written
   * out in turn, then `close` is called (at once, when the file is small or too many files wait).
   */
  submit(fd: number, bytes: number, close: () => void | Promise<void>): void {
    if (bytes < EARLY_WRITEBACK_MIN_BYTES || this.waiting >= MAX_WAITING) {
      void Promise.resolve(close()).catch(() => undefined);
      return;
    }
    this.waiting++;
    this.chain = this.chain
      .then(() => fdatasyncAsync(fd))
      .catch(() => undefined)
      .then(() => close())
      .catch(() => undefined)
      .finally(() => this.waiting--);
  }

  /** Settles once every file submitted so far is written out and closed. */
  idle(): Promise<void> {
    return this.chain;
  }
}
