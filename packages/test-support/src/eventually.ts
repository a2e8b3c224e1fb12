import { setTimeout as sleep } from 'node:timers/promises';

/**
 * Waits until `check` holds, for what a call leaves to finish after its answer (the cleanup of a
 * removal); fails naming `what` if it never does. The bound is only there to end a broken run.
 */
export async function eventually(what: string, check: () => Promise<boolean>, timeoutMs = 30_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`${what}: still not so after ${timeoutMs} ms`);
    await sleep(20);
  }
}
