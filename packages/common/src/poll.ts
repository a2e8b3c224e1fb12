import { setTimeout as sleep } from 'node:timers/promises';

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
