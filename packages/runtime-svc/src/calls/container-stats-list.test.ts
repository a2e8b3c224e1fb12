import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { criRequest, inUnitContext } from '../daemon/unit-context.js';
import { StatsCollector } from '../stats/stats-collector.js';
import { listContainerStatsCall, streamContainerStatsCall } from './container-stats-list.js';

describe('ListContainerStats and StreamContainerStats', () => {
  it('no containers, or a filter matching none, is an empty list rather than an error', async () => {
    await inUnitContext(async (u) => {
      const stats = new StatsCollector(u.ctx);
      assert.deepEqual(await listContainerStatsCall(u.ctx, stats, criRequest('ListContainerStats', {})), { stats: [] });
      const pod = await u.addSandbox('ready');
      await u.addContainer(pod, 'exited', { exitCode: 0 });
      assert.deepEqual(await listContainerStatsCall(u.ctx, stats, criRequest('ListContainerStats', { filter: { id: 'f'.repeat(64) } })), { stats: [] });
      assert.deepEqual(await streamContainerStatsCall(u.ctx, stats, criRequest('StreamContainerStats', { filter: { pod_sandbox_id: 'f'.repeat(64) } })), []);
    });
  });
});
