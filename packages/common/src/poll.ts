/**
 * Asks `probe` every `pollMs` until it answers something other than undefined or `withinMs` has
 * passed; it is asked at least once, the last time at the deadline. Resolves with the answer, or
 * undefined when there was none by the deadline.
 */
export async function pollUntil<T>(probe: () => Promise<T | undefined>, withinMs: number, pollMs: number): Promise<T | undefined> {
  const deadline = performance.now() + withinMs;
  for (;;) {
    const answer = await probe();
    if (answer !== undefined || performance.now() >= deadline) return answer;
    await sleep(Math.min(pollMs, Math.max(1, deadline - performance.now())));
  }
}

export function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/** `promise`, or a rejection naming `what` once `ms` have passed without it settling. */
export function withTimeout<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what} took longer than ${ms} ms`)), ms);
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}
