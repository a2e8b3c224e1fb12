/** Restart delay after a crash: doubles from `initialMs` up to `maxMs`; a run longer than `resetAfterMs` starts over. */
export interface BackoffPolicy {
  initialMs: number;
  maxMs: number;
  resetAfterMs: number;
}

export const DEFAULT_BACKOFF: BackoffPolicy = { initialMs: 200, maxMs: 15_000, resetAfterMs: 5_000 };

export class RestartBackoff {
  private failures = 0;

  constructor(private readonly policy: BackoffPolicy = DEFAULT_BACKOFF) {}

  /** The delay before the next start, given how long the last run lasted. */
  next(lastRunMs: number): number {
    if (lastRunMs >= this.policy.resetAfterMs) this.failures = 0;
    const delay = Math.min(this.policy.maxMs, this.policy.initialMs * 2 ** this.failures);
    this.failures += 1;
    return delay;
  }
}
