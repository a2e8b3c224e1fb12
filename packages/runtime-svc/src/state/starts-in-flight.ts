/**
 * The containers whose StartContainer has begun launching them, until the launch is recorded.
 * Their status is not told before then: a kubelet started again while its StartContainer ran
 * would take a container reported created for one never started, make another, and run both once
 * the first start finishes.
 */
export class StartsInFlight {
  private readonly launches = new Map<string, { done: Promise<void>; end: () => void }>();

  /** Marks the launch of `id` as begun; the function returned ends it (more than once is harmless). */
  begin(id: string): () => void {
    let end!: () => void;
    const done = new Promise<void>((resolve) => (end = resolve));
    const launch = { done, end };
    this.launches.set(id, launch);
    return () => {
      if (this.launches.get(id) === launch) this.launches.delete(id);
      launch.end();
    };
  }

  /** Resolves once the launch of `id` under way (if any) has ended, or after `maxMs`. */
  async settled(id: string, maxMs: number): Promise<void> {
    const launch = this.launches.get(id);
    if (!launch) return;
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([launch.done, new Promise<void>((resolve) => (timer = setTimeout(resolve, maxMs)))]);
    clearTimeout(timer);
  }
}
