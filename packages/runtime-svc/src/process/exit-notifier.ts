import { spawn, type ChildProcessByStdio } from 'node:child_process';
import { createInterface } from 'node:readline';
import type { Readable, Writable } from 'node:stream';
import { fileURLToPath } from 'node:url';

const PIDFD_HELPER = fileURLToPath(new URL('../../helpers/pidfd-watch.py', import.meta.url));

/**
 * Hears at once when a process that is not ours ends (a pause process, whose parent is not
 * runtime-svc): a pidfd per process, polled by one small helper (Node cannot open pidfds).
 * A helper that dies is started again by the next `sync`, which hands it every process again;
 * while there is nothing to follow, none runs.
 */
export class ExitNotifier {
  private helper: ChildProcessByStdio<Writable, Readable, null> | undefined;
  /** key -> "pid startTime" as handed to the current helper. */
  private readonly watched = new Map<string, string>();

  constructor(
    private readonly onExit: (key: string) => void,
    private readonly onError: (message: string) => void,
  ) {}

  /** Follows exactly these processes (key -> pid and start time in clock ticks); reports each exit once. */
  sync(wanted: ReadonlyMap<string, { pid: number; startTime: number }>): void {
    // With nothing to follow no helper runs (~8 MiB of python3 on a node with no pods); the
    // first process to follow starts it again.
    if (wanted.size === 0) {
      this.close();
      return;
    }
    const helper = this.running();
    if (!helper) return;
    const lines: string[] = [];
    for (const key of this.watched.keys()) {
      if (!wanted.has(key)) {
        this.watched.delete(key);
        lines.push(`forget ${key}`);
      }
    }
    for (const [key, { pid, startTime }] of wanted) {
      const target = `${pid} ${startTime}`;
      if (this.watched.get(key) === target) continue;
      this.watched.set(key, target);
      lines.push(`watch ${key} ${target}`);
    }
    if (lines.length > 0) helper.stdin.write(`${lines.join('\n')}\n`);
  }

  close(): void {
    this.helper?.stdin.end();
    this.helper = undefined;
    this.watched.clear();
  }

  private running(): ChildProcessByStdio<Writable, Readable, null> | undefined {
    if (this.helper) return this.helper;
    this.watched.clear();
    let helper: ChildProcessByStdio<Writable, Readable, null>;
    try {
      helper = spawn('/usr/bin/python3', [PIDFD_HELPER], { stdio: ['pipe', 'pipe', 'inherit'] });
    } catch (err) {
      this.onError(`could not start the pidfd helper: ${(err as Error).message}`);
      return undefined;
    }
    helper.stdin.on('error', () => undefined);
    helper.on('error', (err) => {
      // It could not be started (or signalled): the next sync starts another.
      if (this.helper === helper) this.helper = undefined;
      this.onError(`the pidfd helper failed: ${err.message}`);
    });
    helper.on('exit', (code, signal) => {
      if (this.helper !== helper) return;
      this.helper = undefined;
      this.onError(`the pidfd helper ended (${signal ?? `exit ${code}`}); it is started again`);
    });
    createInterface({ input: helper.stdout }).on('line', (line) => {
      const [word, key] = line.split(' ');
      if (word !== 'exited' || key === undefined || this.helper !== helper) return;
      this.watched.delete(key);
      this.onExit(key);
    });
    helper.unref();
    (helper.stdin as unknown as { unref?: () => void }).unref?.();
    (helper.stdout as unknown as { unref?: () => void }).unref?.();
    this.helper = helper;
    return helper;
  }
}
