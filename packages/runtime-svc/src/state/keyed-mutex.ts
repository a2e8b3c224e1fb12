/**
 * One operation per key at a time, in arrival order. Callers that need several keys must take
 * them in one fixed order (a sandbox before its containers) so two of them cannot deadlock.
 */
export class KeyedMutex {
  private readonly tails = new Map<string, Promise<void>>();

  /** Whether an operation on `key` runs or waits now. */
  isHeld(key: string): boolean {
    return this.tails.has(key);
  }

  async run<T>(key: string, operation: () => Promise<T>): Promise<T> {
    const previous = this.tails.get(key) ?? Promise.resolve();
    let release!: () => void;
    const current = new Promise<void>((resolve) => (release = resolve));
    const tail = previous.then(() => current);
    this.tails.set(key, tail);
    await previous;
    try {
      return await operation();
    } finally {
      release();
      if (this.tails.get(key) === tail) this.tails.delete(key);
    }
  }
}
