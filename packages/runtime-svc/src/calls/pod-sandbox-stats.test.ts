import assert from 'node:assert/strict';
import { chmod, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
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

  it("reads each container once: a runsc pod's containers and its sum come from one `runsc events --stats` each", async () => {
    // The handler's runtime records each call, then runs runsc where there is one.
    const scratch = await mkdtemp(join(tmpdir(), 'skiff-runsc-calls-'));
    const calls = join(scratch, 'runsc-calls');
    const runsc = join(scratch, 'runsc');
    await writeFile(runsc, `#!/bin/sh\necho "$*" >> ${calls}\ncommand -v runsc >/dev/null && exec runsc "$@"\nexit 1\n`);
    await chmod(runsc, 0o755);
    try {
      await inUnitContext({ runtime: { handlers: [{ name: 'runsc', runtime_path: runsc, runtime_args: [], runtime_root: '', kind: 'sandbox' }] } }, async (u) => {
        const pod = await u.addSandbox('ready', { runtimeHandler: 'runsc' });
        const containers = [await u.addContainer(pod, 'running', { runtimeHandler: 'runsc' }), await u.addContainer(pod, 'running', { runtimeHandler: 'runsc' })];
        const { stats } = await podSandboxStatsCall(u.ctx, new StatsCollector(u.ctx), criRequest('PodSandboxStats', { pod_sandbox_id: pod.id }));
        assert.equal(stats?.linux?.containers?.length, 2);
        const eventsCalls = (await readFile(calls, 'utf8')).split('\n').filter((line) => line.includes('events --stats'));
        assert.deepEqual(eventsCalls.map((line) => line.split(' ').at(-1)).sort(), containers.map((c) => c.id).sort());
      });
    } finally {
      await rm(scratch, { recursive: true, force: true });
    }
  });
});
