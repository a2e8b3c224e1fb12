const EMPTY = Buffer.alloc(0);

/**
 * Pulls bytes from an async chunk iterator on demand: whole blocks for headers, bounded slices for
 * entry bodies. Every chunk pulled is reported to `onChunk` exactly once (used to hash the stream);
 * when it returns a promise, reading waits for it, and its rejection ends the read.
 */
export class ByteSource {
  private readonly iterator: AsyncIterator<Buffer>;
  private chunk: Buffer = EMPTY;
  private position = 0;
  private ended = false;
  /** Bytes handed out so far, for error messages. */
  offset = 0;

  constructor(
    source: AsyncIterable<Buffer>,
    private readonly onChunk: (chunk: Buffer) => void | Promise<void> = () => undefined,
  ) {
    this.iterator = source[Symbol.asyncIterator]();
  }

  private async fill(): Promise<boolean> {
    while (this.position >= this.chunk.length) {
      if (this.ended) return false;
      const next = await this.iterator.next();
      if (next.done) {
        this.ended = true;
        return false;
      }
      const value = Buffer.isBuffer(next.value) ? next.value : Buffer.from(next.value as Uint8Array);
      const pending = this.onChunk(value);
      if (pending) await pending;
      this.chunk = value;
      this.position = 0;
    }
    return true;
  }

  /** Exactly `length` bytes, or undefined when the source ends before the first byte. Throws on a partial read. */
  async readExact(length: number): Promise<Buffer | undefined> {
    if (!(await this.fill())) return undefined;
    const available = this.chunk.length - this.position;
    if (available >= length) {
      const out = this.chunk.subarray(this.position, this.position + length);
      this.position += length;
      this.offset += length;
      return out;
    }
    const out = Buffer.allocUnsafe(length);
    let filled = 0;
    while (filled < length) {
      if (!(await this.fill())) throw new TruncatedError(this.offset);
      const take = Math.min(length - filled, this.chunk.length - this.position);
      this.chunk.copy(out, filled, this.position, this.position + take);
      this.position += take;
      this.offset += take;
      filled += take;
    }
    return out;
  }

  /** Yields slices totalling exactly `length` bytes; throws if the source ends first. */
  async *take(length: number): AsyncGenerator<Buffer, void, undefined> {
    let remaining = length;
    while (remaining > 0) {
      if (!(await this.fill())) throw new TruncatedError(this.offset);
      const size = Math.min(remaining, this.chunk.length - this.position);
      const slice = this.chunk.subarray(this.position, this.position + size);
      this.position += size;
      this.offset += size;
      remaining -= size;
      yield slice;
    }
  }

  async skip(length: number): Promise<void> {
    for await (const _ of this.take(length)) {
      // discarded
    }
  }

  /** Reads and discards everything left (still reported to onChunk). */
  async drain(): Promise<void> {
    this.position = this.chunk.length;
    while (await this.fill()) {
      this.offset += this.chunk.length - this.position;
      this.position = this.chunk.length;
    }
  }
}

export class TruncatedError extends Error {
  constructor(readonly offset: number) {
    super(`archive ends unexpectedly at byte ${offset}`);
    this.name = 'TruncatedError';
  }
}
