import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { inUnitContext } from '../daemon/unit-context.js';
import { StatsCollector } from '../stats/stats-collector.js';
import { streamPodSandboxMetricsCall } from './pod-sandbox-metrics-stream.js';

describe('StreamPodSandboxMetrics', () => {
  it('covers ready pods only, as ListPodSandboxMetrics does: with none ready nothing is streamed', async () => {
    await inUnitContext(async (u) => {
      const stats = new StatsCollector(u.ctx);
      await u.addSandbox('stopped');
      assert.deepEqual(await streamPodSandboxMetricsCall(u.ctx, stats), []);
    });
  });
});
