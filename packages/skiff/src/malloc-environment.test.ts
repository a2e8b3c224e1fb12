import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { test } from 'node:test';
import { JEMALLOC_PATH, jemallocEnvironment } from './malloc-environment.js';
import { SERVICES } from './services.js';

test('stream-svc, runtime-svc and logs-svc get jemalloc, image-svc glibc with its fixed mmap threshold', () => {
  const env = (name: string) => SERVICES.find((s) => s.name === name)?.environment ?? {};
  for (const name of ['stream-svc', 'runtime-svc', 'logs-svc']) assert.equal(env(name)['LD_PRELOAD'], JEMALLOC_PATH, name);
  assert.equal(env('image-svc')['LD_PRELOAD'], undefined);
  assert.equal(env('image-svc')['MALLOC_MMAP_THRESHOLD_'], '65536');
});

test('a node process started with the environment runs on jemalloc, which takes its settings without complaint', () => {
  const child = spawnSync(process.execPath, ['-e', "process.stdout.write(require('fs').readFileSync('/proc/self/maps', 'utf8'))"], {
    env: { ...process.env, ...jemallocEnvironment() },
    encoding: 'utf8',
  });
  assert.equal(child.status, 0, child.stderr);
  assert.ok(child.stdout.includes(JEMALLOC_PATH), 'libjemalloc is not mapped');
  assert.equal(child.stderr, '', 'jemalloc refused a setting');
});

test('without the library the daemons keep glibc: nothing is preloaded', () => {
  assert.deepEqual(jemallocEnvironment('/nonexistent/libjemalloc.so.2'), {});
});
