import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { test } from 'node:test';
import { keepAllocatorToThisProcess } from './allocator-environment.js';

test("a daemon's allocator settings do not reach the processes it starts; the rest of its environment does", () => {
  const env: NodeJS.ProcessEnv = { PATH: process.env['PATH'], LD_PRELOAD: '/nonexistent/lib.so', MALLOC_CONF: 'narenas:1', MALLOC_MMAP_THRESHOLD_: '65536', SKIFF_KEPT: 'yes' };
  keepAllocatorToThisProcess(env);
  const childEnv = execFileSync('env', [], { env, encoding: 'utf8' }).split('\n');
  assert.ok(childEnv.includes('SKIFF_KEPT=yes'));
  for (const name of ['LD_PRELOAD', 'MALLOC_CONF', 'MALLOC_MMAP_THRESHOLD_']) assert.ok(!childEnv.some((line) => line.startsWith(`${name}=`)), name);
});
