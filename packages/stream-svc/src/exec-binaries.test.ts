import { test } from 'node:test';
import assert from 'node:assert/strict';
import { SANDBOX_RUNTIME_LAUNCHER } from '@skiff/common/core';
import { execBinaries } from './exec-binaries.js';

const config = { runc: '/usr/sbin/runc', conmon: '/usr/bin/conmon', handlers: [{ name: 'gvisor', runtime_path: '/usr/bin/runsc', runtime_args: [], runtime_root: '', kind: 'sandbox' as const }] };


test("an exec runs the runtime that stream-svc's configuration names for the container's handler", () => {
  assert.deepEqual(execBinaries(config, { handler: 'gvisor', root: '/run/skiff/runtimes/gvisor', args: [] }), {
    runtime: { path: '/usr/bin/runsc', root: '/run/skiff/runtimes/gvisor', args: [], launcher: SANDBOX_RUNTIME_LAUNCHER },
    conmon: '/usr/bin/conmon',
  });
  for (const handler of ['', 'runc', 'removed-since']) {
    assert.equal(execBinaries(config, { handler, root: '/run/skiff/runc', args: ['--systemd-cgroup'] }).runtime.path, '/usr/sbin/runc');
  }
});
