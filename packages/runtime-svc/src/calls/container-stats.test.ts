import { describe, it } from 'node:test';
import { status } from '@grpc/grpc-js';
import { criRequest, rejectsWithStatus, inUnitContext } from '../daemon/unit-context.js';
import { StatsCollector } from '../stats/stats-collector.js';
import { containerStatsCall } from './container-stats.js';

describe('ContainerStats', () => {
  it('an empty id is InvalidArgument, an unknown one NotFound', async () => {
    await inUnitContext(async (u) => {
      const stats = new StatsCollector(u.ctx);
      await rejectsWithStatus(containerStatsCall(u.ctx, stats, criRequest('ContainerStats', {})), status.INVALID_ARGUMENT, /^ContainerStats: container_id is required$/);
      await rejectsWithStatus(containerStatsCall(u.ctx, stats, criRequest('ContainerStats', { container_id: 'f'.repeat(64) })), status.NOT_FOUND, /^ContainerStats: container f{64} does not exist$/);
    });
  });
});
