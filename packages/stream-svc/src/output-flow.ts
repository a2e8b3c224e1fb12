import type { Readable } from 'node:stream';
import type { StreamSession } from './session.js';

/**
 * Ties output sources to a session's flow control: a source is paused when a write finds the
 * client's buffer full and every source resumes when it drains. Once the client is gone they
 * flow again, into nothing, so they reach their ends.
 */
export class OutputFlow {
  private readonly sources = new Set<Pick<Readable, 'pause' | 'resume'>>();

  constructor(session: StreamSession) {
    session.onDrain(() => this.resumeAll());
  }

  /** Writes with `write`; pauses `source` when the client is behind. */
  forward(source: Pick<Readable, 'pause' | 'resume'>, write: () => boolean): void {
    this.sources.add(source);
    if (!write()) source.pause();
  }

  resumeAll(): void {
    for (const source of this.sources) source.resume();
  }
}

/**
 * Resolves once every stream has closed, or once none has given data for `idleMs` while flowing:
 * a background process may hold a pipe open for good. A stream paused for a slow client is
 * waited for however long it takes.
 */
export function outputEnded(streams: Array<Readable | null | undefined>, idleMs: number): Promise<void> {
  const open = streams.filter((s): s is Readable => !!s && !s.closed && !s.destroyed);
  if (open.length === 0) return Promise.resolve();
  return new Promise((resolve) => {
    let last = Date.now();
    const onData = (): void => {
      last = Date.now();
    };
    const onClose = (): void => {
      if (open.every((s) => s.closed || s.destroyed)) done();
    };
    const timer = setInterval(() => {
      if (open.some((s) => s.isPaused() && !s.closed)) last = Date.now();
      else if (Date.now() - last >= idleMs) done();
    }, Math.min(100, idleMs));
    function done(): void {
      clearInterval(timer);
      for (const s of open) {
        s.off('data', onData);
        s.off('close', onClose);
      }
      resolve();
    }
    for (const s of open) {
      s.on('data', onData);
      s.on('close', onClose);
    }
  });
}
