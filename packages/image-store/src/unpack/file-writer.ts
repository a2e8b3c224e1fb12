import { writev } from 'node:fs';
import type { FileHandle } from 'node:fs/promises';
import { promisify } from 'node:util';

const writevAsync = promisify(writev);

/** Bytes that may wait to be written before `write` asks its caller to wait. */
const DEFAULT_MAX_PENDING = 1024 * 1024;
/**
 * Bytes gathered before a write is started (flush writes whatever is left): each write is a
 * round trip to the thread pool, and one per 64 KiB chunk cost more than the copying itself.
 */
const DEFAULT_MIN_BATCH = 256 * 1024;

/**
 * Appends chunks to a file from the thread pool without making the caller wait for each one:
 * chunks queue up while a write is under way and go out together in one writev. The caller waits
 * (backpressure) only while more than `maxPending` bytes are queued. The chunks must not be
 * modified after they are handed over.
 */
export class FileAppender {
  private queue: Buffer[] = [];
  private pending = 0;
  private running: Promise<void> | undefined;
  private failure: unknown;

  constructor(
    private readonly fd: number,
    private readonly maxPending = DEFAULT_MAX_PENDING,
    private readonly minBatch = Math.min(DEFAULT_MIN_BATCH, maxPending),
  ) {}

  /** Queues `chunk`; returns a promise to wait for only when too much is queued (or a write failed). */
  write(chunk: Buffer): Promise<void> | undefined {
    if (this.failure !== undefined) return Promise.reject(this.failure);
    if (chunk.length === 0) return undefined;
    this.queue.push(chunk);
    this.pending += chunk.length;
    if (this.pending >= this.minBatch) this.running ??= this.drain(this.minBatch);
    return this.pending > this.maxPending ? this.running!.then(() => this.throwIfFailed()) : undefined;
  }

  /** Resolves once everything queued is written; rejects with the first write error. */
  async flush(): Promise<void> {
    for (;;) {
      while (this.running) await this.running;
      if (this.queue.length === 0 || this.failure !== undefined) break;
      this.running = this.drain(0);
    }
    this.throwIfFailed();
  }

  private throwIfFailed(): void {
    if (this.failure !== undefined) throw this.failure;
  }

  /** Writes while at least `minBytes` are queued (and something is). Never rejects: a failure is kept for the next write or flush. */
  private async drain(minBytes: number): Promise<void> {
    try {
      while (this.queue.length > 0 && this.pending >= minBytes && this.failure === undefined) {
        const batch = this.queue;
        this.queue = [];
        const bytes = batch.reduce((sum, b) => sum + b.length, 0);
        await writeAll(this.fd, batch);
        this.pending -= bytes;
      }
    } catch (err) {
      this.failure = err;
      this.queue = [];
      this.pending = 0;
    } finally {
      this.running = undefined;
    }
  }
}

async function writeAll(fd: number, buffers: Buffer[]): Promise<void> {
  let rest = buffers;
  while (rest.length > 0) {
    let written = (await writevAsync(fd, rest)).bytesWritten;
    const left: Buffer[] = [];
    for (const b of rest) {
      if (written >= b.length) written -= b.length;
      else {
        left.push(written > 0 ? b.subarray(written) : b);
        written = 0;
      }
    }
    rest = left;
  }
}

/** The appender over an open FileHandle (its fd; the handle stays the owner). */
export function appenderFor(handle: FileHandle, maxPending?: number): FileAppender {
  return new FileAppender(handle.fd, maxPending);
}
