/** The shortest window a CPU rate is measured over. */
export const MIN_RATE_WINDOW_NANOS = 1_000_000_000n;

interface Baseline {
  at: bigint;
  cpuNanos: number;
  /** The rate measured over the full window that ended at `at`. */
  rate?: number;
}

/**
 * CPU usage rates (nanocores: 1e9 is one core busy) from cumulative CPU time, against the
 * previous reading, as CRI-O and containerd compute usage_nano_cores. Several readers (the
 * kubelet's summary, its eviction manager, `crictl stats`) read at their own moments, often
 * milliseconds apart, and the kernel advances a cgroup's CPU time in scheduler ticks: a window
 * of a few milliseconds would report a busy container idle, or a quiet one at several cores. So
 * a rate is measured over at least MIN_RATE_WINDOW_NANOS; a reading sooner than that after the
 * last window ended gets that window's rate and leaves the window where it was. Before the first
 * full window there is no rate (the kubelet then computes one itself).
 */
export class CpuRates {
  private readonly baselines = new Map<string, Baseline>();

  /** The rate of `key` at `at` (ns since the epoch), its cumulative CPU time being `cpuNanos`. */
  rate(key: string, at: bigint, cpuNanos: number): number | undefined {
    const baseline = this.baselines.get(key);
    // A counter that went back (a pod's sum lost a removed container) starts a new window.
    if (!baseline || cpuNanos < baseline.cpuNanos) {
      this.baselines.set(key, { at, cpuNanos });
      return undefined;
    }
    const window = at - baseline.at;
    if (window < MIN_RATE_WINDOW_NANOS) return baseline.rate;
    const rate = ((cpuNanos - baseline.cpuNanos) * 1e9) / Number(window);
    this.baselines.set(key, { at, cpuNanos, rate });
    return rate;
  }

  forget(key: string): void {
    this.baselines.delete(key);
  }
}
