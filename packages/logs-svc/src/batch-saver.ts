import type { ContainerLog, WrittenMark } from './container-log.js';

/** What written batches leave to make durable: each file's mark once written, and the journal entry they end at. */
export interface WrittenBatches {
  marks: Map<ContainerLog, WrittenMark>;
  cursor: string;
}

/**
 * Makes written batches durable behind the writer, so that a batch's lines reach their files
 * while the previous batch's files are still being synced and the position saved (tens of ms on
 * a busy disk, seconds in a stall). One save runs at a time; the batches written meanwhile are
 * merged into the next one, whose position supersedes theirs.
 */
export class BatchSaver {
  private next: WrittenBatches | undefined;
  private running: Promise<void> | undefined;

  /** `save` handles its own errors: it is given each merged batch in turn and must not reject. */
  constructor(private readonly save: (batches: WrittenBatches) => Promise<void>) {}

  add(files: ContainerLog[], cursor: string): void {
    const next = this.next ?? { marks: new Map<ContainerLog, WrittenMark>(), cursor };
    for (const file of files) next.marks.set(file, file.writtenMark());
    next.cursor = cursor;
    this.next = next;
    this.running ??= this.drain();
  }

  /** Resolves once every batch added so far has been saved. */
  idle(): Promise<void> {
    return this.running ?? Promise.resolve();
  }

  private async drain(): Promise<void> {
    try {
      while (this.next) {
        const batches = this.next;
        this.next = undefined;
        await this.save(batches);
      }
    } finally {
      this.running = undefined;
    }
  }
}
