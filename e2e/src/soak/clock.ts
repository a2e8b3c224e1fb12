/**
 * Time for the soak's loops and its progress log.
 *
 *   sleep(ms, signal?)     resolves early, without error, when signal aborts
 *   since(t0)              seconds since t0, for log lines ("+12.3s")
 *   progress(message)      a line on stderr with the time since the soak began
 *   pollFor(what, timeoutMs, everyMs, attempt)   until attempt gives a value
 */

const started = Date.now();

export function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal?.aborted) return resolve();
    const timer = setTimeout(done, Math.max(0, ms));
    function done() {
      clearTimeout(timer);
      signal?.removeEventListener('abort', done);
      resolve();
    }
    signal?.addEventListener('abort', done, { once: true });
  });
}

export function since(t0: number = started, at: number = Date.now()): string {
  return `+${((at - t0) / 1000).toFixed(1)}s`;
}

export function progress(message: string): void {
  process.stderr.write(`soak ${since()} ${new Date().toISOString()}: ${message}\n`);
}

/** Calls `attempt` every `everyMs` until it gives a value; throws, naming `what` and the last error, after timeoutMs. */
export async function pollFor<T>(what: string, timeoutMs: number, everyMs: number, attempt: () => Promise<T | undefined>): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let lastError = '';
  for (;;) {
    try {
      const value = await attempt();
      if (value !== undefined) return value;
    } catch (err) {
      lastError = `: ${(err as Error).message}`;
    }
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}${lastError}`);
    await sleep(everyMs);
  }
}
