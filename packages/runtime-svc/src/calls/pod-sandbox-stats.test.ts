import { describe, it } from 'node:test';
import { status } from '@grpc/grpc-js';
import { criRequest, rejectsWithStatus, inUnitContext } from '../daemon/unit-context.js';
import { StatsCollector } from '../stats/stats-collector.js';
import { podSandboxStatsCall } from './pod-sandbox-stats.js';

describe('PodSandboxStats', () => {
  it('an empty id is InvalidArgument, an unknown one NotFound', async () => {
    await inUnitContext(async (u) => {
      const stats = new StatsCollector(u.ctx);
      await rejectsWithStatus(podSandboxStatsCall(u.ctx, stats, criRequest('PodSandboxStats', {})), status.INVALID_ARGUMENT, /pod_sandbox_id is required/);
      await rejectsWithStatus(podSandboxStatsCall(u.ctx, stats, criRequest('PodSandboxStats', { pod_sandbox_id: 'f'.repeat(64) })), status.NOT_FOUND, /pod sandbox f{64} does not exist/);
    });
  });
});
