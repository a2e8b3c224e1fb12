/**
 * A Prometheus histogram read from a /metrics page, the difference of two readings (the
 * observations made between them), and quantiles estimated from its buckets as PromQL's
 * histogram_quantile does: the bucket holding the rank is found and the value is interpolated
 * linearly between its bounds (the first bucket's lower bound is 0). So a quantile is only as
 * fine as the buckets: with the kubelet's pod start buckets (0.5, 1, 2, 3 s, ...) a p50 of
 * 0.8 s says "between 0.5 and 1 s, interpolated".
 */

export interface Histogram {
  /** Upper bounds and cumulative counts, ascending; the last bound is +Inf. */
  buckets: Array<{ le: number; count: number }>;
  count: number;
  sum: number;
}

/** The histogram `name` (with no labels other than `le`) on a Prometheus text page, or undefined. */
export function readHistogram(page: string, name: string): Histogram | undefined {
  const buckets: Histogram['buckets'] = [];
  let count: number | undefined;
  let sum = 0;
  for (const line of page.split('\n')) {
    if (line.startsWith('#')) continue;
    const bucket = new RegExp(`^${name}_bucket\\{le="([^"]+)"\\} (\\S+)`).exec(line);
    if (bucket) buckets.push({ le: bucket[1] === '+Inf' ? Infinity : Number(bucket[1]), count: Number(bucket[2]) });
    else if (line.startsWith(`${name}_count `)) count = Number(line.slice(name.length + 7));
    else if (line.startsWith(`${name}_sum `)) sum = Number(line.slice(name.length + 5));
  }
  if (count === undefined || buckets.length === 0) return undefined;
  buckets.sort((a, b) => a.le - b.le);
  return { buckets, count, sum };
}

/** The observations made between `before` and `after`. */
export function histogramDifference(after: Histogram, before: Histogram | undefined): Histogram {
  if (before === undefined) return after;
  return {
    buckets: after.buckets.map((b, i) => ({ le: b.le, count: b.count - (before.buckets[i]?.count ?? 0) })),
    count: after.count - before.count,
    sum: after.sum - before.sum,
  };
}

/** The q-quantile (0..1), interpolated within its bucket; NaN with no observations. */
export function histogramQuantile(h: Histogram, q: number): number {
  if (h.count <= 0) return Number.NaN;
  const rank = q * h.count;
  let lower = 0;
  let below = 0;
  for (const { le, count } of h.buckets) {
    if (count >= rank) {
      // Above the last finite bound nothing is known but the bound itself.
      if (le === Infinity) return lower;
      return lower + ((le - lower) * (rank - below)) / (count - below);
    }
    lower = le;
    below = count;
  }
  return lower;
}
