import { test } from 'node:test';
import assert from 'node:assert/strict';
import { parseRunscStats } from './sandboxed-stats.js';
import { cgroupDirOf } from './sandbox-oom.js';

test('a runsc events --stats reading becomes a sample; no limit and a "no limit" value are left out', () => {
  const reading = JSON.stringify({
    type: 'stats',
    id: 'c',
    data: { cpu: { usage: { total: 18151390043 } }, memory: { usage: { limit: 0, usage: 2025472, failcnt: 0 } }, pids: { current: 3 } },
  });
  assert.deepEqual(parseRunscStats(reading), { cpuNanos: 18151390043, memoryUsage: 2025472, workingSet: 2025472, memoryLimit: undefined, pids: 3 });
  const limited = JSON.stringify({ data: { memory: { usage: { limit: 67108864, usage: 1 } } } });
  assert.equal(parseRunscStats(limited).memoryLimit, 67108864);
  assert.equal(parseRunscStats(JSON.stringify({ data: { memory: { usage: { limit: 2 ** 63, usage: 1 } } } })).memoryLimit, undefined);
});

test('the cgroup directory of a cgroupfs path, and of a systemd slice:prefix:name', () => {
  assert.equal(cgroupDirOf('/skiff/abc'), '/skiff/abc');
  assert.equal(cgroupDirOf('kubepods-burstable-pod1.slice:skiff:abc'), '/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod1.slice/skiff-abc.scope');
  assert.equal(cgroupDirOf('-.slice:skiff:abc'), '/skiff-abc.scope');
});
