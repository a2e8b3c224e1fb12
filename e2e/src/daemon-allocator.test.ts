/**
 * The allocators the daemons run with (packages/skiff/src/malloc-environment.ts), on a real
 * `skiff up`: jemalloc in stream-svc, runtime-svc and logs-svc, glibc in image-svc, and neither
 * setting passed on to what the daemons start (conmon lives as long as its container).
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import { childrenOf } from './lib/child-pids.js';
import { startRuntimeHarness, type RuntimeHarness } from './lib/runtime-harness.js';
import { listConmonProcesses } from './lib/runtime-inventory.js';

const JEMALLOC = 'libjemalloc.so.2';
let h: RuntimeHarness;

before(async () => {
  h = await startRuntimeHarness();
});

after(async () => {
  await h?.stop();
});

async function servicePid(name: string): Promise<number> {
  const pid = await h.skiff.servicePid(name);
  assert.ok(pid, `${name} is not running`);
  return pid;
}

const mapsOf = (pid: number) => readFile(`/proc/${pid}/maps`, 'utf8');
const environmentOf = async (pid: number) => (await readFile(`/proc/${pid}/environ`, 'utf8')).split('\0');

test('stream-svc, runtime-svc and logs-svc run on jemalloc, image-svc on glibc', async () => {
  for (const name of ['stream-svc', 'runtime-svc', 'logs-svc']) assert.ok((await mapsOf(await servicePid(name))).includes(JEMALLOC), `${name} has no jemalloc mapped`);
  assert.ok(!(await mapsOf(await servicePid('image-svc'))).includes(JEMALLOC), 'image-svc has jemalloc mapped');
});

test("a container's monitor and runtime-svc's helpers get neither the preload nor the allocator's settings", async () => {
  const pod = await h.runPod();
  await h.runContainer(pod, 'sleeper');
  const runtimePid = await servicePid('runtime-svc');
  const started = [...(await listConmonProcesses(h.skiff.runDir)).map((c) => c.pid), ...childrenOf(runtimePid), ...childrenOf(await servicePid('image-svc'))];
  assert.ok(started.length >= 2, `found ${started.length} processes started by the daemons`);
  for (const pid of started) {
    const env = await environmentOf(pid).catch(() => undefined);
    if (!env) continue; // ended meanwhile
    for (const name of ['LD_PRELOAD', 'MALLOC_CONF', 'MALLOC_MMAP_THRESHOLD_']) assert.ok(!env.some((e) => e.startsWith(`${name}=`)), `${name} in the environment of ${pid}`);
    assert.ok(!(await mapsOf(pid).catch(() => '')).includes(JEMALLOC), `jemalloc mapped in ${pid}`);
  }
});
