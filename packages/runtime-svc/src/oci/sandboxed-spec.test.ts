import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { adaptSpecToSandbox } from './sandboxed-spec.js';
import { buildSpec, type NamespacesInput } from './spec-builder.js';
import type { HostFacts } from './host-facts.js';

const FACTS: HostFacts = {
  oomScoreAdj: 0,
  boundingCapabilities: ['CAP_CHOWN', 'CAP_KILL'],
  apparmorEnabled: false,
  apparmorDefaultProfileLoaded: false,
  cgroupV1Controllers: ['cpu', 'memory', 'pids'],
  cgroupVersion: 1,
};

function namespacesOf(namespaces: NamespacesInput): { type: string; path?: string }[] {
  const spec = adaptSpecToSandbox(buildSpec({ rootfs: '/bundle/rootfs', args: ['sh'], namespaces }, FACTS), false);
  return (spec.linux.namespaces ?? []).filter((ns) => ns.type !== 'mount' && ns.type !== 'cgroup');
}

describe('a container of a sandbox-kind runtime (runsc)', () => {
  it("names no PID namespace for the pod's, which runsc then runs it in; the others are left as they are", () => {
    const pod = (kind: string): { mode: 'join'; path: string } => ({ mode: 'join', path: `/var/lib/skiff/runtime/sandboxes/p/${kind}ns` });
    assert.deepEqual(namespacesOf({ network: { mode: 'join', path: '/run/skiff/netns/p' }, ipc: pod('ipc'), uts: pod('uts'), pid: pod('pid') }), [
      { type: 'network', path: '/run/skiff/netns/p' },
      { type: 'ipc', path: '/var/lib/skiff/runtime/sandboxes/p/ipcns' },
      { type: 'uts', path: '/var/lib/skiff/runtime/sandboxes/p/utsns' },
    ]);
  });

  it('keeps a PID namespace of its own', () => {
    assert.deepEqual(namespacesOf({ pid: { mode: 'new' } }).filter((ns) => ns.type === 'pid'), [{ type: 'pid' }]);
  });
});
