import type { ExitFileWait } from '../conmon/exit-file.js';

/**
 * What the exit watcher knows, for the calls that answer from memory: whether it is watching, and
 * the containers whose exit file it has seen but whose exit is not recorded yet (a refresh failed
 * or waits for logs-svc). While it watches, a created or running container that is not among them
 * and whose process is alive has not exited: its record in memory is current.
 */
export class ExitWatchState {
  watching = false;
  private readonly unrecorded = new Set<string>();
  private readonly fileWaiters = new Map<string, Set<() => void>>();

  /** The watcher saw a file named `id` appear in the exit directory. */
  exitFileAppeared(id: string): void {
    const waiters = this.fileWaiters.get(id);
    if (!waiters) return;
    for (const end of [...waiters]) end();
  }

  /** Resolves `woken` when the watcher next sees `id`'s exit file, or after `withinMs`; `cancel` stops listening. */
  readonly nextExitFile = (id: string, withinMs: number): ExitFileWait => {
    let waiters = this.fileWaiters.get(id);
    if (!waiters) this.fileWaiters.set(id, (waiters = new Set()));
    let wake!: () => void;
    const woken = new Promise<void>((resolve) => (wake = resolve));
    const cancel = (): void => {
      clearTimeout(timer);
      const current = this.fileWaiters.get(id);
      current?.delete(cancel);
      if (current?.size === 0) this.fileWaiters.delete(id);
      wake();
    };
    const timer = setTimeout(cancel, withinMs);
    waiters.add(cancel);
    return { woken, cancel };
  };

  exitSeen(id: string): void {
    this.unrecorded.add(id);
  }

  exitRecorded(id: string): void {
    this.unrecorded.delete(id);
  }

  /** Whether the record in memory of a created or running container can be trusted without looking at its exit file. */
  current(id: string): boolean {
    return this.watching && !this.unrecorded.has(id);
  }
}
