/**
 * What the exit watcher knows, for the calls that answer from memory: whether it is watching, and
 * the containers whose exit file it has seen but whose exit is not recorded yet (a refresh failed
 * or waits for logs-svc). While it watches, a created or running container that is not among them
 * and whose process is alive has not exited: its record in memory is current.
 */
export class ExitWatchState {
  watching = false;
  private readonly unrecorded = new Set<string>();

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
