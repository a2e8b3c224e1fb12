import { readdir, readFile, utimes } from 'node:fs/promises';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';

/** Where journald keeps its files: volatile and persistent storage, one directory per machine id. */
export const JOURNAL_ROOTS = ['/run/log/journal', '/var/log/journal'];

/** Gaps between wake-ups while a barrier is awaited, in ms: journald may take a moment to write it. */
const WAKE_GAPS_MS = [0, 1, 1, 1, 2, 2, 2, 4, 4, 8, 16, 32, 64, 128];

/** The gap between wake-ups while the followers are kept awake. */
const KEEP_AWAKE_GAP_MS = 25;

/**
 * Wakes `journalctl --follow` early. journald writes entries through mmap, which inotify does not
 * see, and tells followers of new entries only by a change it schedules about 250-500 ms later;
 * `journalctl -f` waits on inotify alone. Any inotify event in a journal directory makes it read
 * what is there, so touching the directories reaches a barrier in milliseconds instead.
 */
export class JournalWakeup {
  private dirs: string[] | undefined;
  private awakeUntil = 0;
  private keepingAwake: Promise<void> | undefined;

  constructor(private readonly roots: string[] = JOURNAL_ROOTS, private readonly machineIdFile = '/etc/machine-id') {}

  /** The journal directories of this machine that exist (every machine's, without a machine id). */
  async directories(): Promise<string[]> {
    if (this.dirs?.length) return this.dirs;
    const id = (await readFile(this.machineIdFile, 'utf8').catch(() => '')).trim();
    const found: string[] = [];
    for (const root of this.roots) {
      const names = await readdir(root, { withFileTypes: true }).catch(() => []);
      for (const entry of names) if (entry.isDirectory() && (!id || entry.name === id)) found.push(join(root, entry.name));
    }
    this.dirs = found;
    return found;
  }

  /** Touches each journal directory once; a directory gone is looked for again next time. */
  async wake(): Promise<void> {
    const now = new Date();
    for (const dir of await this.directories()) {
      await utimes(dir, now, now).catch(() => {
        this.dirs = undefined;
      });
    }
  }

  /**
   * Wakes the followers again and again, ever less often, until `settled` is done. It goes on at
   * the longest gap rather than leave the rest to journald's notice, which a busy journal (a
   * rotation, a flood) has been seen to hold back for many seconds.
   */
  async wakeUntil(settled: Promise<unknown>): Promise<void> {
    let done = false;
    void settled.then(
      () => (done = true),
      () => (done = true),
    );
    for (let i = 0; ; i++) {
      const gap = WAKE_GAPS_MS[Math.min(i, WAKE_GAPS_MS.length - 1)]!;
      if (gap > 0) await sleep(gap);
      if (done) return;
      await this.wake();
    }
  }

  /**
   * Wakes the followers every few milliseconds for the next `ms` (a later call extends the time).
   * One loop runs however many calls overlap; its timers do not keep the process alive.
   */
  keepAwakeFor(ms: number): void {
    this.awakeUntil = Math.max(this.awakeUntil, Date.now() + ms);
    this.keepingAwake ??= this.keepAwake().finally(() => (this.keepingAwake = undefined));
  }

  private async keepAwake(): Promise<void> {
    while (Date.now() < this.awakeUntil) {
      await this.wake();
      await sleep(KEEP_AWAKE_GAP_MS, undefined, { ref: false });
    }
  }
}
