import { test } from 'node:test';
import assert from 'node:assert/strict';
import { histogramDifference, histogramQuantile, readHistogram } from './prom-histogram.js';

const PAGE = (counts: [number, number, number, number], sum: number): string =>
  [
    '# HELP kubelet_pod_start_sli_duration_seconds [ALPHA] Duration in seconds to start a pod',
    '# TYPE kubelet_pod_start_sli_duration_seconds histogram',
    `kubelet_pod_start_sli_duration_seconds_bucket{le="0.5"} ${counts[0]}`,
    `kubelet_pod_start_sli_duration_seconds_bucket{le="1"} ${counts[1]}`,
    `kubelet_pod_start_sli_duration_seconds_bucket{le="2"} ${counts[2]}`,
    `kubelet_pod_start_sli_duration_seconds_bucket{le="+Inf"} ${counts[3]}`,
    `kubelet_pod_start_sli_duration_seconds_sum ${sum}`,
    `kubelet_pod_start_sli_duration_seconds_count ${counts[3]}`,
    'kubelet_pod_start_total_duration_seconds_count 99',
  ].join('\n');

test('readHistogram reads the buckets, count and sum of one histogram and no other', () => {
  assert.deepEqual(readHistogram(PAGE([1, 3, 4, 4], 3.5), 'kubelet_pod_start_sli_duration_seconds'), {
    buckets: [
      { le: 0.5, count: 1 },
      { le: 1, count: 3 },
      { le: 2, count: 4 },
      { le: Infinity, count: 4 },
    ],
    count: 4,
    sum: 3.5,
  });
  assert.equal(readHistogram(PAGE([1, 3, 4, 4], 3.5), 'kubelet_pod_start_duration_seconds'), undefined);
});

test('histogramQuantile interpolates within the bucket that holds the rank, as histogram_quantile does', () => {
  const h = readHistogram(PAGE([0, 10, 20, 20], 0), 'kubelet_pod_start_sli_duration_seconds')!;
  // rank 10 of 20 is the last of the (0.5, 1] bucket
  assert.equal(histogramQuantile(h, 0.5), 1);
  // rank 5: half way through the (0.5, 1] bucket
  assert.equal(histogramQuantile(h, 0.25), 0.75);
  // rank 19.8: 98% of the way through (1, 2]
  assert.ok(Math.abs(histogramQuantile(h, 0.99) - 1.98) < 1e-9);
  // the first bucket's lower bound is 0
  assert.equal(histogramQuantile(readHistogram(PAGE([4, 4, 4, 4], 0), 'kubelet_pod_start_sli_duration_seconds')!, 0.5), 0.25);
  // beyond the last finite bound only that bound is known
  assert.equal(histogramQuantile(readHistogram(PAGE([0, 0, 0, 4], 0), 'kubelet_pod_start_sli_duration_seconds')!, 0.5), 2);
  assert.ok(Number.isNaN(histogramQuantile(readHistogram(PAGE([0, 0, 0, 0], 0), 'kubelet_pod_start_sli_duration_seconds')!, 0.5)));
});

test('histogramDifference leaves the observations made between two readings', () => {
  const before = readHistogram(PAGE([1, 3, 4, 4], 3.5), 'kubelet_pod_start_sli_duration_seconds')!;
  const after = readHistogram(PAGE([1, 5, 9, 10], 12), 'kubelet_pod_start_sli_duration_seconds')!;
  const diff = histogramDifference(after, before);
  assert.deepEqual(diff.buckets.map((b) => b.count), [0, 2, 5, 6]);
  assert.equal(diff.count, 6);
  assert.equal(diff.sum, 8.5);
  assert.equal(histogramDifference(after, undefined), after);
});
