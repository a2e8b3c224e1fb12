import { SingleFlight } from '@skiff/common';

interface Flight {
  controller: AbortController;
  waiters: number;
  promise: Promise<void>;
}

/**
 * One operation per key at a time (through SingleFlight); concurrent callers share it. Each caller
 * may give up on its own through its signal; the shared operation is aborted only once every
 * caller waiting on it has given up.
 */
export class SharedOperations {
  private readonly singleFlight = new SingleFlight<void>();
  private readonly flights = new Map<string, Flight>();

  run(key: string, signal: AbortSignal | undefined, operation: (signal: AbortSignal) => Promise<void>): Promise<void> {
    let flight = this.flights.get(key);
    if (!flight) {
      const controller = new AbortController();
      const created: Flight = { controller, waiters: 0, promise: Promise.resolve() };
      created.promise = this.singleFlight.run(key, () => operation(controller.signal)).finally(() => {
        if (this.flights.get(key) === created) this.flights.delete(key);
      });
      created.promise.catch(() => undefined);
      this.flights.set(key, created);
      flight = created;
    }
    return this.wait(flight, signal);
  }

  /** The in-flight operation for `key`, if any (settles, never rejects). */
  pending(key: string): Promise<void> | undefined {
    return this.flights.get(key)?.promise.catch(() => undefined);
  }

  keys(): string[] {
    return [...this.flights.keys()];
  }

  /** Aborts everything in flight and waits for it to settle. */
  async abortAll(reason: unknown): Promise<void> {
    const flights = [...this.flights.values()];
    for (const flight of flights) flight.controller.abort(reason);
    await Promise.all(flights.map((flight) => flight.promise.catch(() => undefined)));
  }

  private wait(flight: Flight, signal: AbortSignal | undefined): Promise<void> {
    flight.waiters++;
    if (!signal) return flight.promise;
    return new Promise<void>((resolve, reject) => {
      const giveUp = (): void => {
        flight.waiters--;
        if (flight.waiters > 0) return reject(signal.reason);
        // The last caller to leave aborts the operation and is answered once it has cleaned up.
        flight.controller.abort(signal.reason);
        flight.promise.then(
          () => reject(signal.reason),
          () => reject(signal.reason),
        );
      };
      if (signal.aborted) return giveUp();
      signal.addEventListener('abort', giveUp, { once: true });
      flight.promise.then(
        () => {
          signal.removeEventListener('abort', giveUp);
          resolve();
        },
        (err: unknown) => {
          signal.removeEventListener('abort', giveUp);
          reject(err);
        },
      );
    });
  }
}
