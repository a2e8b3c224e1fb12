import { test } from 'node:test';
import assert from 'node:assert/strict';
import { isSoleLiveContainer, parseRunscPsCount, parseRunscStats, sandboxedReading } from './sandboxed-stats.js';
import { cgroupDirOf } from './sandbox-oom.js';
import { withoutRootUnified } from './cgroup-stats.js';

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

test('runsc ps --format json: the number of pids it lists', () => {
  assert.equal(parseRunscPsCount('[2,7,9]\n'), 3);
  assert.equal(parseRunscPsCount('[]'), 0);
  assert.equal(parseRunscPsCount('{"pid":2}'), undefined);
});

test("a runsc container's reading: its own figures from runsc; the pod cgroup's rest only for a pod's only container, never its host processes", () => {
  const own = { cpuNanos: 5, memoryUsage: 100, workingSet: 100, memoryLimit: undefined, pids: 4 };
  const pod = {
    sample: { cpuNanos: 50, memoryUsage: 900, workingSet: 800, rss: 700, pageFaults: 11, majorPageFaults: 1, memoryLimit: 4096, swapUsage: 0, swapLimit: 8192, pids: 30, cpuPressure: { some: { totalNanos: 7, avg10: 0, avg60: 0, avg300: 0 } } },
    detail: { cpuUserNanos: 20, cpuSystemNanos: 30, cfsPeriods: 3, cacheBytes: 10, oomKills: 0, memoryFailcnt: 2, processes: 9, fileDescriptors: 80, sockets: 4, threadsMax: 0 },
  };
  assert.deepEqual(sandboxedReading(own, 2, pod), {
    sample: { cpuNanos: 5, memoryUsage: 100, workingSet: 100, pids: 4, rss: 700, pageFaults: 11, majorPageFaults: 1, memoryLimit: 4096, swapUsage: 0, swapLimit: 8192, cpuPressure: { some: { totalNanos: 7, avg10: 0, avg60: 0, avg300: 0 } } },
    detail: { cpuUserNanos: 20, cpuSystemNanos: 30, cfsPeriods: 3, cacheBytes: 10, oomKills: 0, memoryFailcnt: 2, threadsMax: 0, processes: 2 },
  });
  // In a pod of several containers the pod's figures are no one container's.
  assert.deepEqual(sandboxedReading(own, 2), { sample: { cpuNanos: 5, memoryUsage: 100, workingSet: 100, pids: 4 }, detail: { processes: 2 } });
  // runsc not answering ps: no process count, not the sandbox's host processes.
  assert.deepEqual(sandboxedReading({}, undefined, pod).detail.processes, undefined);
});

test("a sandbox left at the cgroup2 root of a hybrid host has no cgroup2 entry: the root's pressure is the host's", () => {
  assert.deepEqual(withoutRootUnified(new Map([['memory', '/pod/sb'], ['', '/']])), new Map([['memory', '/pod/sb']]));
  assert.deepEqual(withoutRootUnified(new Map([['memory', '/pod/sb'], ['', '/pod/sb']])), new Map([['memory', '/pod/sb'], ['', '/pod/sb']]));
  // cgroup v2 alone: the entry is all there is.
  assert.deepEqual(withoutRootUnified(new Map([['', '/']])), new Map([['', '/']]));
});

test("a restarted container is its pod's only live one: the exited instance the kubelet keeps does not count", () => {
  assert.equal(isSoleLiveContainer('b', [{ id: 'a', phase: 'exited' }, { id: 'b', phase: 'running' }]), true);
  assert.equal(isSoleLiveContainer('b', [{ id: 'a', phase: 'running' }, { id: 'b', phase: 'running' }]), false);
  assert.equal(isSoleLiveContainer('a', [{ id: 'a', phase: 'exited' }, { id: 'b', phase: 'running' }]), false);
  assert.equal(isSoleLiveContainer('a', [{ id: 'a', phase: 'created' }]), true);
});
