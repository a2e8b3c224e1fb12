import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { readFile } from 'node:fs/promises';
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

test('an idle daemon with its process metrics is woken about ten times a second, not a hundred', async () => {
  // A process that registers the metrics and then does nothing; its main thread's wake-ups are its
  // voluntary context switches.
  const script = `const { DaemonMetrics } = await import(${JSON.stringify(new URL('./daemon-metrics.js', import.meta.url).href)}); new DaemonMetrics('idle'); console.log('ready'); setTimeout(() => {}, 60000);`;
  const child = spawn(process.execPath, ['--input-type=module', '-e', script], { stdio: ['ignore', 'pipe', 'inherit'] });
  try {
    await new Promise<void>((resolve) => child.stdout.once('data', () => resolve()));
    const switches = async (): Promise<number> => Number(/^voluntary_ctxt_switches:\s+(\d+)$/m.exec(await readFile(`/proc/${child.pid}/task/${child.pid}/status`, 'utf8'))?.[1]);
    const before = await switches();
    await new Promise((resolve) => setTimeout(resolve, 2000));
    const woken = (await switches()) - before;
    assert.ok(woken < 80, `woken ${woken} times in 2 s`);
  } finally {
    child.kill();
  }
});
