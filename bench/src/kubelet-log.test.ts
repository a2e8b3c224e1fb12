import { test } from 'node:test';
import assert from 'node:assert/strict';
import { goTimeMs, klogTimeMs, readKubeletLog } from './kubelet-log.js';

// Lines as kubelet v1.37 at --v 2 writes them (klog's text format; values JSON, Stringers quoted).
const LOG = [
  'I1127 17:20:01.250000   41234 kubelet.go:2760] "SyncLoop ADD" source="api" pods=["default/one-0"]',
  'I1127 17:20:05.000000   41234 kubelet.go:2760] "SyncLoop ADD" source="api" pods=["default/b-1","default/b-2","other/x"]',
  'I1127 17:20:01.900000   41234 kubelet.go:2788] "SyncLoop (PLEG): event for pod" pod="default/one-0" event={"ID":"0b5a","Type":"ContainerStarted","Data":"sandbox1"}',
  'I1127 17:20:02.100000   41234 kubelet.go:2788] "SyncLoop (PLEG): event for pod" pod="default/one-0" event={"ID":"0b5a","Type":"ContainerStarted","Data":"app1"}',
  'I1127 17:20:03.100000   41234 kubelet.go:2788] "SyncLoop (PLEG): event for pod" pod="default/one-0" event={"ID":"0b5a","Type":"ContainerStarted","Data":"app1"}',
  'I1127 17:20:02.100000   41234 kubelet.go:2788] "SyncLoop (PLEG): event for pod" pod="default/one-0" event={"ID":"0b5a","Type":"ContainerDied","Data":"old"}',
  'I1127 17:20:02.300000   41234 pod_startup_latency_tracker.go:144] "Observed pod startup duration" pod="default/one-0" podStartSLOduration=2.3012 podStartE2EDuration="2.3012s" totalImagesPullingTime="0s" totalInitContainerRuntime="0s" isStatefulPod=false podCreationTimestamp="2026-11-27 17:20:00 +0000 UTC" imagePullSessionsCount=0 imagePullSessionsStartsCount=0 observedRunningTime="2026-11-27 17:20:02.2005 +0000 UTC m=+20.123" watchObservedRunningTime="2026-11-27 17:20:02.3012 +0000 UTC m=+20.224"',
].join('\n');

test('klog header times and Go time strings become epoch ms', () => {
  assert.equal(klogTimeMs('I1127 17:20:01.250000   41234 kubelet.go:1] "x"', 2026), new Date(2026, 10, 27, 17, 20, 1).getTime() + 250);
  assert.equal(klogTimeMs('not a klog line', 2026), undefined);
  assert.equal(goTimeMs('2026-11-27 17:20:02.2005 +0000 UTC m=+20.123'), Date.UTC(2026, 10, 27, 17, 20, 2) + 200.5);
  assert.equal(goTimeMs('2026-11-27 19:20:00 +0200 EET'), Date.UTC(2026, 10, 27, 17, 20, 0));
});

test('readKubeletLog gathers each pod of the namespace: first ADD, ContainerStarted by id, the SLI line', () => {
  const pods = readKubeletLog(LOG, 'default', 2026);
  assert.deepEqual([...pods.keys()].sort(), ['b-1', 'b-2', 'one-0']);
  const one = pods.get('one-0')!;
  const at = (s: number, ms: number): number => new Date(2026, 10, 27, 17, 20, s).getTime() + ms;
  assert.equal(one.addMs, at(1, 250));
  assert.deepEqual([...one.startedMs], [['sandbox1', at(1, 900)], ['app1', at(2, 100)]]);
  assert.equal(one.sloSeconds, 2.3012);
  assert.equal(one.observedRunningMs, Date.UTC(2026, 10, 27, 17, 20, 2) + 200.5);
  assert.equal(one.watchObservedRunningMs, Date.UTC(2026, 10, 27, 17, 20, 2) + 301.2);
  assert.equal(pods.get('b-2')!.addMs, at(5, 0));
  assert.equal(pods.get('b-2')!.sloSeconds, undefined);
});
