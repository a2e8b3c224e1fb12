import { spawn, type ChildProcess } from 'node:child_process';
import type { Logger } from '@skiff/common/core';
import { ExportParser } from './journal-export.js';
import { BARRIER_FIELD, classifyEntry, SENDER_FIELDS, type JournalEvent, type TrustedSender } from './journal-entry.js';
import type { JournalPosition } from './journal-position.js';

export type { JournalPosition };

/** The fields read (cursor and timestamps always come too): less for journalctl to print and us to parse. */
export const OUTPUT_FIELDS = ['MESSAGE', 'CONTAINER_ID_FULL', 'PRIORITY', 'CONTAINER_PARTIAL_MESSAGE', 'MESSAGE_ID', BARRIER_FIELD, ...SENDER_FIELDS].join(',');


export interface JournalReaderOptions {
  journalctl: string;
  /** Where the reader starts: after a cursor, or at a time (seconds since the epoch). */
  from: JournalPosition;
  /** Who may send container output. */
  sender: TrustedSender;
  log: Logger;
}

/** Queued bytes above which journalctl's output is no longer read until the queue drains. */
const HIGH_WATER_BYTES = 1024 * 1024;

/**
 * Follows the journal through `journalctl -f -o export`, matching only entries sent over the
 * native protocol (conmon's and our barriers) and journald's own notices. Entries queue up until
 * taken. A journalctl that ends is started again after the last entry it gave.
 */
export class JournalReader {
  private child: ChildProcess | undefined;
  private parser = new ExportParser();
  private queue: JournalEvent[] = [];
  private queuedBytes = 0;
  private paused = false;
  private lastCursor: string | undefined;
  private waiters: Array<() => void> = [];
  private stopped = false;

  constructor(private readonly options: JournalReaderOptions) {
    if ('cursor' in options.from) this.lastCursor = options.from.cursor;
  }

  start(): void {
    const position = this.lastCursor ? ['--after-cursor', this.lastCursor] : ['--since', `@${(this.options.from as { sinceSeconds: number }).sinceSeconds}`];
    const args = ['--follow', '--no-tail', '--all', '--quiet', '--no-pager', '--output', 'export', `--output-fields=${OUTPUT_FIELDS}`, ...position, '_TRANSPORT=journal', '_TRANSPORT=driver'];
    this.parser = new ExportParser();
    const child = spawn(this.options.journalctl, args, { stdio: ['ignore', 'pipe', 'pipe'] });
    this.child = child;
    let stderr = '';
    child.stderr!.on('data', (c: Buffer) => {
      if (stderr.length < 4096) stderr += c.toString('utf8');
    });
    child.stdout!.on('data', (chunk: Buffer) => this.onData(chunk));
    child.on('error', (err) => this.options.log.error({ err: err.message }, 'cannot run journalctl'));
    child.on('close', (code, signal) => {
      if (this.child !== child) return;
      this.child = undefined;
      if (this.stopped) return;
      this.options.log.warn({ code, signal, stderr: stderr.trim() }, 'journalctl ended; following the journal again in 1 s');
      setTimeout(() => {
        if (!this.stopped) this.start();
      }, 1000).unref();
    });
  }

  private onData(chunk: Buffer): void {
    for (const fields of this.parser.push(chunk)) {
      const event = classifyEntry(fields, this.options.sender);
      if (!event.cursor) continue;
      this.lastCursor = event.cursor;
      this.queue.push(event);
      this.queuedBytes += event.kind === 'output' ? event.message.length + 256 : 256;
    }
    if (this.queuedBytes + this.parser.pendingBytes > HIGH_WATER_BYTES && !this.paused) {
      this.paused = true;
      this.child?.stdout?.pause();
    }
    if (this.queue.length > 0) {
      const waiters = this.waiters;
      this.waiters = [];
      for (const w of waiters) w();
    }
  }

  /** Resolves once entries are queued (at once if some are). */
  async waitForEntries(): Promise<void> {
    if (this.queue.length > 0 || this.stopped) return;
    await new Promise<void>((resolve) => this.waiters.push(resolve));
  }

  /** Takes every queued entry, oldest first. */
  take(): JournalEvent[] {
    const taken = this.queue;
    this.queue = [];
    this.queuedBytes = 0;
    if (this.paused) {
      this.paused = false;
      this.child?.stdout?.resume();
    }
    return taken;
  }

  stop(): void {
    this.stopped = true;
    this.child?.kill('SIGTERM');
    for (const w of this.waiters) w();
    this.waiters = [];
  }
}
