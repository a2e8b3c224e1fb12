import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { criRequest, inUnitContext } from '../daemon/unit-context.js';
import { StatsCollector } from '../stats/stats-collector.js';
import { listPodSandboxStatsCall, streamPodSandboxStatsCall } from './pod-sandbox-stats-list.js';

describe('ListPodSandboxStats and StreamPodSandboxStats', () => {
  it('no sandboxes, or a filter matching none, is an empty list rather than an error', async () => {
    await inUnitContext(async (u) => {
      const stats = new StatsCollector(u.ctx);
      assert.deepEqual(await listPodSandboxStatsCall(u.ctx, stats, criRequest('ListPodSandboxStats', {})), { stats: [] });
      await u.addSandbox('stopped', { labels: { app: 'web' } });
      assert.deepEqual(await listPodSandboxStatsCall(u.ctx, stats, criRequest('ListPodSandboxStats', { filter: { id: 'f'.repeat(64) } })), { stats: [] });
      assert.deepEqual(await streamPodSandboxStatsCall(u.ctx, stats, criRequest('StreamPodSandboxStats', { filter: { label_selector: { app: 'none' } } })), []);
    });
  });
});
