import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import type { NamespaceModeName } from '../state/records.js';
import { pauseReason } from './pause-decision.js';

function pod(pid: NamespaceModeName, network: NamespaceModeName = 'POD', ipc: NamespaceModeName = 'POD') {
  return { namespaces: { network, pid, ipc } };
}

describe('which pods run a pause process', () => {
  it("runs the kubelet's default pod (a PID namespace per container) under runc without one, on the host network and IPC too", () => {
    assert.equal(pauseReason(pod('CONTAINER'), 'oci', false), undefined);
    assert.equal(pauseReason(pod('CONTAINER', 'NODE', 'NODE'), 'oci', false), undefined);
    assert.equal(pauseReason(pod('NODE'), 'oci', false), undefined);
  });

  it('keeps it for a shared PID namespace, a sandbox-kind runtime, and every pod when the operator says so', () => {
    assert.match(pauseReason(pod('POD'), 'oci', false) ?? '', /share a PID namespace/);
    assert.match(pauseReason(pod('CONTAINER'), 'sandbox', false) ?? '', /sandbox/);
    assert.match(pauseReason(pod('CONTAINER'), 'oci', true) ?? '', /pause_every_pod/);
  });
});
