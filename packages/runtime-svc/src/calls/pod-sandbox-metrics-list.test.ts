import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { inUnitContext } from '../daemon/unit-context.js';
import { StatsCollector } from '../stats/stats-collector.js';
import { listPodSandboxMetricsCall } from './pod-sandbox-metrics-list.js';

describe('ListPodSandboxMetrics', () => {
  it('covers ready pods only: with none ready the list is empty', async () => {
    await inUnitContext(async (u) => {
      const stats = new StatsCollector(u.ctx);
      assert.deepEqual(await listPodSandboxMetricsCall(u.ctx, stats), { pod_metrics: [] });
      await u.addSandbox('stopped');
      await u.addSandbox('creating');
      assert.deepEqual(await listPodSandboxMetricsCall(u.ctx, stats), { pod_metrics: [] });
    });
  });
});
