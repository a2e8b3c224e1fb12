import { randomBytes } from 'node:crypto';
import { mkdir } from 'node:fs/promises';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { formatRecords, formatTimestamp, Mutex, removeAtomicWriteDebris, type Logger, type LogsStatus, type SpawnServer } from '@skiff/common/core';
import { BarrierSender } from './barrier.js';
import { BatchSaver, type WrittenBatches } from './batch-saver.js';
import { ContainerLog } from './container-log.js';
import type { JournalEvent, OutputEvent, TrustedSender } from './journal-entry.js';
import type { JournalPosition } from './journal-position.js';
import { readBackContainerOutput } from './journal-read-back.js';
import { JournalReader } from './journal-reader.js';
import { JournalWakeup } from './journal-wakeup.js';
import { loadState, saveState, type LogsState } from './state-file.js';

/**
 * How long a reopen may wait for its place in the journal. Longer than a flush: under heavy output
 * the reader may be seconds behind, and a failed reopen makes the kubelet undo its rotation.
 */
const REOPEN_TIMEOUT_MS = 30_000;

/**
 * How long the journal reader is kept awake once a container is tracked. Its first lines would
 * otherwise wait for journald's change notice, up to a quarter second, and a client reading the
 * log right after the container has started (the kubelet after a restart) would find it empty.
 */
const NEW_CONTAINER_AWAKE_MS = 3_000;

export class NotReady extends Error {}
export class UnknownContainer extends Error {}
export class BarrierTimeout extends Error {}
/** Logged when stop ends a retry with a batch's cursor unsaved. */
const STOPPED_UNSAVED = 'stopped with a batch unsaved: the next start truncates to the saved sizes and writes it again';

/** Ends a retry loop once stop has been asked: the saved state stays as it was, which a restart replays from. */
class Stopped extends Error {}

interface Barrier {
  resolve(): void;
  reject(err: Error): void;
  /** The process that sends it (logger, or the spawn helper): only its entry counts. */
  senderPid: number | undefined;
  /** A container whose file is switched at the barrier's place in the journal. */
  reopen?: string;
}

/** What GET /v1/status answers. */
export type EngineStatus = LogsStatus;

export interface EngineOptions {
  stateDir: string;
  journalctl: string;
  log: Logger;
  barrierTimeoutMs: number;
  /** Who may send container output: conmon, run by root. */
  sender: TrustedSender;
  /** The logger(1) that sends barriers when no spawn helper runs; /usr/bin/logger by default. */
  logger?: string;
  /** The spawn helper that sends barriers while it runs (see barrier.ts); logger alone without it. */
  barrierHelper?: SpawnServer;
  /** Wakes the journal reader while a barrier is awaited; the journal directories of this machine by default. */
  wakeup?: JournalWakeup;
}

/** At most one warning about dropped untrusted entries per this period: a flood must not flood our log. */
const UNTRUSTED_WARN_MS = 10_000;

/** Read-back output is written in pieces of about this size, so a long history is never held whole. */
const READ_BACK_WRITE_BYTES = 1024 * 1024;

/** Forgotten containers remembered, whose last entries in flight are not counted as unknown. */
const FORGOTTEN_KEPT = 1024;

/**
 * Turns container output read from the journal into CRI log files. Each batch is appended to the
 * files, the files synced, then the cursor and the files' sizes saved together.
 */
export class LogEngine {
  private readonly containers = new Map<string, ContainerLog>();
  /** Ids from the saved state whose fate waits for the list of containers from runtime-svc. */
  private saved: LogsState['containers'] = {};
  /** Until start has run: ids added or forgotten meanwhile (the start-up list from runtime-svc may be older). */
  private changedBeforeStart: Set<string> | undefined = new Set<string>();
  /**
   * Serialises the changes to the tracked set with the writing of batches. Whoever else takes it
   * (`exclusive`) first waits for the saver, so that what it saves starts from the last batch.
   */
  private readonly lock = new Mutex();
  private readonly saver = new BatchSaver((batches) => this.saveBatches(batches));
  private readonly barriers = new Map<string, Barrier>();
  private readonly wakeup: JournalWakeup;
  private readonly barrierSender: BarrierSender;
  private reader: JournalReader | undefined;
  private state!: LogsState;
  private stopped = false;
  private loop: Promise<void> | undefined;
  /** Container output handled so far, and the journal timestamps of the newest entry read and written. */
  readonly throughput = { lines: 0, bytes: 0, newestReadMicros: 0n, newestWrittenMicros: 0n };
  private suppressedTotal = 0;
  private readonly suppressedBy = new Map<string, number>();
  private lastSuppressed: string | undefined;
  private writeError: { path: string; message: string } | undefined;
  private stateError: string | undefined;
  private untrustedTotal = 0;
  private lastUntrusted: string | undefined;
  private lastUntrustedWarning = 0;
  private unknownTotal = 0;
  private lastUnknown: string | undefined;
  private lastUnknownWarning = 0;
  private readonly forgotten = new Set<string>();
  /** A save given up because stop was asked: a reopen must not switch files past it. */
  private unsavedAtStop = false;

  private constructor(private readonly options: EngineOptions) {
    this.wakeup = options.wakeup ?? new JournalWakeup();
    this.barrierSender = new BarrierSender(options.logger, options.barrierHelper);
  }

  private get stateFile(): string {
    return join(this.options.stateDir, 'state.json');
  }

  static async open(options: EngineOptions): Promise<LogEngine> {
    const engine = new LogEngine(options);
    await mkdir(options.stateDir, { recursive: true, mode: 0o700 });
    // A write of the state cut short by SIGKILL leaves its temp file; only one logs-svc runs.
    await removeAtomicWriteDebris(options.stateDir);
    const state = await loadState(engine.stateFile);
    if (state) {
      engine.state = state;
      engine.saved = { ...state.containers };
    } else {
      // First start: containers created from now on are followed from their first line.
      engine.state = { version: 1, sinceSeconds: Math.floor(Date.now() / 1000) - 1, containers: {} };
      await saveState(engine.stateFile, engine.state);
    }
    return engine;
  }

  get ready(): boolean {
    return this.reader !== undefined;
  }

  /**
   * Settles the containers of the previous run against runtime-svc's list (id → log path), then
   * starts reading the journal after the saved cursor.
   */
  async start(current: Map<string, string>): Promise<void> {
    await this.lock.run(async () => {
      for (const [id, saved] of Object.entries(this.saved)) {
        if (this.changedBeforeStart?.has(id) || this.containers.has(id)) continue;
        if (current.get(id) !== saved.path) continue;
        const log = await this.openOrReport(id, saved.path, () => ContainerLog.resume(id, saved));
        if (log) this.containers.set(id, log);
      }
      for (const [id, path] of current) {
        if (this.changedBeforeStart?.has(id) || this.containers.has(id) || !path) continue;
        const log = await this.openOrReport(id, path, () => ContainerLog.open(id, path));
        if (!log) continue;
        // Made while logs-svc was down, it may have written before: a logs-svc that died had perhaps
        // read past those entries without knowing the container.
        if (log.size === 0) log.readBackUntil = this.position();
        this.containers.set(id, log);
      }
      this.saved = {};
      this.changedBeforeStart = undefined;
      await this.persist();
      for (const log of this.containers.values()) {
        if (log.readBackUntil) await this.readBack(log);
      }
    });
    const from = this.state.cursor ? { cursor: this.state.cursor } : { sinceSeconds: this.state.sinceSeconds };
    this.reader = new JournalReader({ journalctl: this.options.journalctl, from, sender: this.options.sender, log: this.options.log });
    this.reader.start();
    this.loop = this.run();
    this.options.log.info({ containers: this.containers.size, from }, 'following the journal');
  }

  /** Opening a file may fail (a full disk, a removed directory): reported and tried again. */
  private async openOrReport(id: string, path: string, open: () => Promise<ContainerLog>): Promise<ContainerLog | undefined> {
    for (let attempt = 0; ; attempt++) {
      try {
        const log = await open();
        if (this.writeError?.path === path) this.writeError = undefined;
        return log;
      } catch (err) {
        const message = (err as Error).message;
        this.options.log.error({ container: id, path, err: message }, 'cannot open the container log file');
        this.writeError = { path, message };
        if (attempt >= 2) return undefined;
        await sleep(500);
      }
    }
  }

  private async persist(): Promise<void> {
    const containers: LogsState['containers'] = { ...this.saved };
    for (const [id, c] of this.containers) containers[id] = c.saved();
    this.state = { ...this.state, containers };
    await saveState(this.stateFile, this.state);
  }

  /**
   * Where the follower stands: every entry at or before it has been written (under the lock, the
   * saved cursor is the last entry applied), or, before the first, where it starts reading.
   */
  private position(): JournalPosition {
    return this.state.cursor ? { cursor: this.state.cursor } : { sinceSeconds: this.state.sinceSeconds };
  }

  /**
   * Starts following a container's output into `path` (created empty at once). With `readBack`,
   * the container may have written already (logs-svc learns of it late): its entries up to the
   * follower's position are read back from the journal first, into a file that is still empty.
   */
  async track(id: string, path: string, options: { readBack?: boolean } = {}): Promise<void> {
    this.changedBeforeStart?.add(id);
    this.forgotten.delete(id);
    await this.exclusive(async () => {
      const existing = this.containers.get(id);
      if (existing && existing.path === path) return;
      if (existing) {
        existing.removed = true;
        await existing.close();
      }
      delete this.saved[id];
      const log = await ContainerLog.open(id, path);
      if (options.readBack && log.size === 0) log.readBackUntil = this.position();
      this.containers.set(id, log);
      await this.persist();
      // Before start, start reads it back, before the follower runs.
      if (log.readBackUntil && this.reader) await this.readBack(log);
    });
    this.wakeup.keepAwakeFor(NEW_CONTAINER_AWAKE_MS);
  }

  /**
   * Writes a container's output from the journal up to `readBackUntil`, under the lock: the
   * follower takes every later entry. The mark is saved before and cleared once the lines are
   * synced, so a logs-svc killed in between cuts the file back and reads it back again.
   */
  private async readBack(log: ContainerLog): Promise<void> {
    const until = log.readBackUntil!;
    let lines = 0;
    try {
      for await (const batch of readBackContainerOutput({ journalctl: this.options.journalctl, containerId: log.id, sender: this.options.sender, until })) {
        for (const ev of batch) this.addOutput(log, ev);
        lines += batch.length;
        if (log.pendingBytes >= READ_BACK_WRITE_BYTES) await this.writeOne(log);
      }
    } catch (err) {
      if (err instanceof Stopped) throw err;
      // Reading it again later would put older lines after the newer ones the follower writes.
      this.options.log.error({ container: log.id, lines, err: (err as Error).message }, "cannot read all of the container's earlier output back from the journal; what was not read is missing from its file");
    }
    await this.writeOne(log);
    if (!log.removed) {
      await log.sync();
      log.markDurable(log.writtenMark());
    }
    log.readBackUntil = undefined;
    await this.persist();
    if (lines > 0) this.options.log.info({ container: log.id, lines, until }, "read the container's earlier output back from the journal");
  }

  private addOutput(c: ContainerLog, ev: OutputEvent): void {
    c.add(formatRecords(formatTimestamp(ev.realtimeMicros), ev.stream, ev.message, ev.partial));
    this.throughput.lines++;
    this.throughput.bytes += ev.message.length;
    this.throughput.newestReadMicros = ev.realtimeMicros;
  }

  /** Stops following a container; entries still in flight for it are dropped, no file is made. */
  async forget(id: string): Promise<void> {
    this.changedBeforeStart?.add(id);
    const c = this.containers.get(id);
    if (c) c.removed = true;
    this.forgotten.add(id);
    if (this.forgotten.size > FORGOTTEN_KEPT) this.forgotten.delete(this.forgotten.values().next().value!);
    await this.exclusive(async () => {
      const log = this.containers.get(id);
      this.containers.delete(id);
      delete this.saved[id];
      if (log) await log.close();
      await this.persist();
    });
  }

  /** Resolves once every line the container sent before this call is in its file. */
  async flush(id: string): Promise<void> {
    if (!this.ready) throw new NotReady('logs-svc is still reading the container list from runtime-svc');
    await this.barrier();
    if (!this.containers.has(id)) throw new UnknownContainer(`container ${id} is not followed by logs-svc`);
  }

  /** Lines sent before the call stay in the (renamed) old file; later ones go to a new file at the path. */
  async reopen(id: string): Promise<void> {
    if (!this.ready) throw new NotReady('logs-svc is still reading the container list from runtime-svc');
    if (!this.containers.has(id)) throw new UnknownContainer(`container ${id} is not followed by logs-svc`);
    await this.barrier(id);
  }

  private async barrier(reopen?: string): Promise<void> {
    const timeoutMs = reopen ? Math.max(REOPEN_TIMEOUT_MS, this.options.barrierTimeoutMs) : this.options.barrierTimeoutMs;
    const nonce = randomBytes(12).toString('hex');
    let resolveDone!: () => void;
    let rejectDone!: (err: Error) => void;
    const done = new Promise<void>((resolve, reject) => {
      resolveDone = resolve;
      rejectDone = reject;
    });
    const barrier: Barrier = { resolve: resolveDone, reject: rejectDone, senderPid: undefined, ...(reopen ? { reopen } : {}) };
    this.barriers.set(nonce, barrier);
    // The sender's pid is set before its entry can be read.
    const sent = this.barrierSender.send(nonce, (pid) => (barrier.senderPid = pid));
    let timer: NodeJS.Timeout | undefined;
    const expired = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new BarrierTimeout(`logs-svc is behind the journal: its barrier did not come back within ${timeoutMs} ms`)), timeoutMs);
    });
    // Every promise is in the race from the start: a sender slower than the timeout, or a barrier
    // refused before its sender ended, must not reject with nothing awaiting it (which ends the daemon).
    const outcome = Promise.race([Promise.all([sent, done]), expired]);
    void this.wakeup.wakeUntil(outcome);
    try {
      await outcome;
    } finally {
      clearTimeout(timer);
      this.barriers.delete(nonce);
    }
  }

  private async run(): Promise<void> {
    while (!this.stopped && this.reader) {
      await this.reader.waitForEntries();
      const events = this.reader.take();
      if (events.length === 0) continue;
      try {
        await this.lock.run(() => this.apply(events));
      } catch (err) {
        if (err instanceof Stopped) {
          this.options.log.warn(STOPPED_UNSAVED);
          return;
        }
        this.options.log.error({ err: (err as Error).message }, 'cannot write a batch of container output; stopping');
        process.exitCode = 1;
        throw err;
      }
    }
  }

  private async apply(events: JournalEvent[]): Promise<void> {
    const reached: Barrier[] = [];
    let cursor: string | undefined;
    for (const ev of events) {
      if (ev.kind === 'output') {
        const c = this.containers.get(ev.containerId);
        if (c && !c.removed) this.addOutput(c, ev);
        else if (!c && !this.forgotten.has(ev.containerId)) this.noteUnknown(ev.containerId);
      } else if (ev.kind === 'barrier') {
        const candidate = this.barriers.get(ev.nonce);
        // Our own logger, run as root: a copy of the field from anyone else proves nothing.
        const b = candidate && ev.senderUid === 0 && ev.senderPid === candidate.senderPid ? candidate : undefined;
        if (b?.reopen) {
          await this.commit(ev.cursor);
          cursor = undefined;
          await this.switchFile(b);
          continue;
        }
        if (b) reached.push(b);
      } else if (ev.kind === 'suppressed') {
        this.noteSuppressed(ev.count, ev.text);
      } else if (ev.kind === 'untrusted') {
        this.noteUntrusted(ev.containerId, ev.sender);
      }
      cursor = ev.cursor;
    }
    const newest = this.throughput.newestReadMicros;
    if (!cursor) {
      for (const b of reached) b.resolve();
      return;
    }
    const written = await this.writePending();
    this.throughput.newestWrittenMicros = newest;
    // A flush asks for the lines to be in the file, where readers find them; they are. Were
    // logs-svc killed before the saver synced them and saved the cursor, the restart truncates to
    // the saved sizes and writes the same lines again from the saved cursor.
    for (const b of reached) b.resolve();
    this.saver.add(written, cursor);
  }

  private async switchFile(b: Barrier): Promise<void> {
    const c = this.containers.get(b.reopen!);
    if (!c || c.removed) return b.reject(new UnknownContainer(`container ${b.reopen} was removed`));
    try {
      await c.reopen();
      await this.persist();
      b.resolve();
    } catch (err) {
      b.reject(err as Error);
    }
  }

  /** Writes and syncs every pending record, then saves the cursor with the files' sizes. */
  private async commit(cursor: string): Promise<void> {
    this.saver.add(await this.writePending(), cursor);
    await this.saver.idle();
    if (this.unsavedAtStop) throw new Stopped();
  }

  /** Runs `operation` under the lock once every written batch is saved. */
  private exclusive<T>(operation: () => Promise<T>): Promise<T> {
    return this.lock.run(async () => {
      await this.saver.idle();
      return operation();
    });
  }

  /** Writes every pending record; answers the files written. */
  private async writePending(): Promise<ContainerLog[]> {
    const written: ContainerLog[] = [];
    for (const c of this.containers.values()) {
      if (c.hasPending && (await this.writeOne(c))) written.push(c);
    }
    return written;
  }

  /** Writes a file's pending records, trying again every second while it fails; false if it was forgotten first. */
  private async writeOne(c: ContainerLog): Promise<boolean> {
    for (;;) {
      if (c.removed) return false;
      try {
        await c.writePending();
        if (this.writeError?.path === c.path) this.writeError = undefined;
        return true;
      } catch (err) {
        const message = (err as Error).message;
        if (this.writeError?.message !== message) this.options.log.error({ container: c.id, path: c.path, err: message }, 'cannot write the container log; retrying every second');
        this.writeError = { path: c.path, message };
        if (this.stopped) throw new Stopped();
        await sleep(1000);
      }
    }
  }

  /**
   * Syncs the files written, then saves the cursor with the files' sizes. One file at a time: the
   * other threads of the pool stay free for the writes of the next batch.
   */
  private async saveBatches({ marks, cursor }: WrittenBatches): Promise<void> {
    for (const [c, mark] of marks) {
      if (c.removed) continue;
      await c.sync().catch((err: Error) => this.options.log.warn({ container: c.id, err: err.message }, 'fsync failed'));
      c.markDurable(mark);
    }
    try {
      await this.saveCursor(cursor);
    } catch (err) {
      // saveCursor retries any other failure until stop is asked.
      this.unsavedAtStop = true;
      this.options.log.warn({ err: (err as Error).message }, STOPPED_UNSAVED);
    }
  }

  private async saveCursor(cursor: string): Promise<void> {
    this.state.cursor = cursor;
    for (;;) {
      try {
        await this.persist();
        this.stateError = undefined;
        return;
      } catch (err) {
        const message = (err as Error).message;
        if (this.stateError !== message) this.options.log.error({ err: message }, 'cannot save the logs state; retrying every second');
        this.stateError = message;
        if (this.stopped) throw new Stopped();
        await sleep(1000);
      }
    }
  }

  private noteSuppressed(count: number, text: string): void {
    this.suppressedTotal += count;
    this.lastSuppressed = text;
    const id = [...this.containers.keys()].find((k) => text.includes(k));
    if (id) this.suppressedBy.set(id, (this.suppressedBy.get(id) ?? 0) + count);
    this.options.log.warn({ count, notice: text, ...(id ? { container: id } : {}) }, 'journald dropped messages (rate limit); container output is missing lines');
  }

  private noteUntrusted(containerId: string, sender: string): void {
    this.untrustedTotal++;
    this.lastUntrusted = `container ${containerId} from ${sender}`;
    const now = Date.now();
    if (now - this.lastUntrustedWarning < UNTRUSTED_WARN_MS) return;
    this.lastUntrustedWarning = now;
    this.options.log.warn({ container: containerId, sender, dropped: this.untrustedTotal }, 'dropped a journal entry naming a container that its conmon did not send');
  }

  /** Output of a container logs-svc does not follow (nor has just forgotten): not written anywhere. */
  private noteUnknown(containerId: string): void {
    this.unknownTotal++;
    this.lastUnknown = containerId;
    const now = Date.now();
    if (now - this.lastUnknownWarning < UNTRUSTED_WARN_MS) return;
    this.lastUnknownWarning = now;
    this.options.log.warn({ container: containerId, dropped: this.unknownTotal }, 'dropped output of a container logs-svc does not follow');
  }

  status(): EngineStatus {
    return {
      ready: this.ready,
      ...(this.state.cursor ? { cursor: this.state.cursor } : {}),
      containers: this.containers.size,
      suppressed: { total: this.suppressedTotal, byContainer: Object.fromEntries(this.suppressedBy), ...(this.lastSuppressed ? { last: this.lastSuppressed } : {}) },
      ...(this.writeError ? { writeError: this.writeError } : {}),
      ...(this.stateError ? { stateError: this.stateError } : {}),
      untrusted: { total: this.untrustedTotal, ...(this.lastUntrusted ? { last: this.lastUntrusted } : {}) },
      unknown: { total: this.unknownTotal, ...(this.lastUnknown ? { last: this.lastUnknown } : {}) },
      memory: (({ rss, heapUsed, heapTotal, external }) => ({ rss, heapUsed, heapTotal, external }))(process.memoryUsage()),
    };
  }

  async stop(): Promise<void> {
    this.stopped = true;
    this.reader?.stop();
    await this.loop?.catch(() => undefined);
    await this.exclusive(async () => {
      for (const c of this.containers.values()) await c.close();
    });
  }
}
