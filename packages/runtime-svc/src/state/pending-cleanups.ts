import { errorMessage, type Logger } from '@skiff/common';

/** Pauses between the attempts of a cleanup that failed; after the last, start-up recovery finishes it. */
const RETRY_DELAYS_MS = [500, 5_000];

/**
 * The cleanups of removed containers and sandboxes still running after their removal was answered.
 * Their records say "removing" on disk until the cleanup ends, so a crash leaves nothing recovery
 * does not finish. A sandbox's cleanup waits for those of its containers: their mounts, runc
 * containers and cgroups go before the pod's own.
 */
export class PendingCleanups {
  private readonly running = new Map<string, { work: Promise<void>; sandboxId: string }>();

  constructor(private readonly log: Pick<Logger, 'warn'>) {}

  /**
   * Runs `cleanup` for `id` (a container of `sandboxId`, or the sandbox itself) in the background,
   * again after a failure, and logs if it never succeeds.
   */
  start(id: string, sandboxId: string, what: string, cleanup: () => Promise<void>): void {
    const work = (async () => {
      for (let attempt = 0; ; attempt++) {
        try {
          await cleanup();
          return;
        } catch (err) {
          const delay = RETRY_DELAYS_MS[attempt];
          this.log.warn({ id, err: errorMessage(err), retry: delay !== undefined }, `cleaning up after the removal of ${what} failed`);
          if (delay === undefined) return;
          await new Promise((resolve) => setTimeout(resolve, delay));
        }
      }
    })().finally(() => this.running.delete(id));
    this.running.set(id, { work, sandboxId });
  }

  /** Settles when the cleanups under way of the sandbox's containers have ended. */
  async containersOf(sandboxId: string): Promise<void> {
    await Promise.all([...this.running].filter(([id, c]) => c.sandboxId === sandboxId && id !== sandboxId).map(([, c]) => c.work));
  }

  /** Settles when every cleanup under way has ended. */
  async idle(): Promise<void> {
    await Promise.all([...this.running.values()].map((c) => c.work));
  }

  get size(): number {
    return this.running.size;
  }
}
