import assert from 'node:assert/strict';
import { createRequire } from 'node:module';
import { test } from 'node:test';
import { DaemonMetrics } from './daemon-metrics.js';

test("a daemon's registry has the process metrics, without loading what Skiff does not use", async () => {
  const metrics = new DaemonMetrics('test-svc');
  let spent = 0;
  for (let i = 0; i < 2_000_000; i++) spent += i % 7;
  assert.ok(spent > 0);
  const text = await metrics.registry.metrics();
  const value = (name: string): number => Number(new RegExp(`^${name}\\{service="test-svc"\\} (\\S+)$`, 'm').exec(text)?.[1]);
  const cpu = { user: value('process_cpu_user_seconds_total'), system: value('process_cpu_system_seconds_total'), total: value('process_cpu_seconds_total') };
  assert.ok(cpu.user > 0, 'CPU time counts from the start of the process');
  assert.ok(Math.abs(cpu.total - cpu.user - cpu.system) < 1e-6, 'the total is user + system');
  for (const name of ['process_resident_memory_bytes', 'process_open_fds', 'nodejs_eventloop_lag_seconds', 'nodejs_heap_size_used_bytes', 'nodejs_version_info']) {
    assert.match(text, new RegExp(`^${name}\\{`, 'm'), name);
  }
  assert.doesNotMatch(text, /nodejs_active_handles_total/);
  const loaded = Object.keys(createRequire(import.meta.url).cache);
  assert.ok(loaded.some((path) => path.includes('prom-client')), 'prom-client is loaded');
  for (const unused of ['@opentelemetry', 'pushgateway', 'tdigest', '/cluster.js']) assert.ok(!loaded.some((path) => path.includes(unused)), `${unused} is not loaded`);
});
