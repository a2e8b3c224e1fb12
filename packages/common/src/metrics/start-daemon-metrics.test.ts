import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createLogger } from '../logger.js';
import { startDaemonMetrics } from './start-daemon-metrics.js';

async function pageWith(env: Record<string, string | undefined>): Promise<string> {
  const saved = { SKIFF_SUPERVISED: process.env['SKIFF_SUPERVISED'], SKIFF_SERVICE_RESTARTS: process.env['SKIFF_SERVICE_RESTARTS'] };
  const dir = await mkdtemp(join(tmpdir(), 'skiff-metrics-'));
  try {
    for (const [key, value] of Object.entries(env)) {
      if (value === undefined) delete process.env[key];
      else process.env[key] = value;
    }
    const metrics = await startDaemonMetrics('some-svc', '', dir, createLogger('test', 'fatal'));
    return await metrics.registry.metrics();
  } finally {
    for (const [key, value] of Object.entries(saved)) {
      if (value === undefined) delete process.env[key];
      else process.env[key] = value;
    }
    await rm(dir, { recursive: true, force: true });
  }
}

test('under skiff up a daemon shows how often the supervisor restarted it', async () => {
  assert.match(await pageWith({ SKIFF_SUPERVISED: '1', SKIFF_SERVICE_RESTARTS: '3' }), /^skiff_service_restarts_total\{service="some-svc"\} 3$/m);
  assert.match(await pageWith({ SKIFF_SUPERVISED: '1', SKIFF_SERVICE_RESTARTS: undefined }), /^skiff_service_restarts_total\{service="some-svc"\} 0$/m);
  assert.match(await pageWith({ SKIFF_SUPERVISED: '1', SKIFF_SERVICE_RESTARTS: 'x' }), /^skiff_service_restarts_total\{service="some-svc"\} 0$/m);
});

test('a daemon not run by skiff up (systemd) has no restart count of its own', async () => {
  assert.doesNotMatch(await pageWith({ SKIFF_SUPERVISED: undefined, SKIFF_SERVICE_RESTARTS: undefined }), /skiff_service_restarts_total/);
});
