import { test } from 'node:test';
import assert from 'node:assert/strict';
import { conmonRuntimeArgs, runtimeCommand, type RuntimeBinary } from './runtime-binary.js';
import { SANDBOX_RUNTIME_LAUNCHER } from './sandbox-runtime-launcher.js';

const runc: RuntimeBinary = { path: '/usr/sbin/runc', root: '/run/skiff/runc', args: ['--systemd-cgroup'], kind: 'oci' };
const runsc: RuntimeBinary = { path: '/usr/bin/runsc', root: '/run/skiff/runtimes/runsc', args: ['--platform=systrap'], kind: 'sandbox' };

test('an OCI runtime runs as itself: its root, then its global arguments, then the command', () => {
  assert.deepEqual(runtimeCommand(runc, ['exec', 'id']), { file: '/usr/sbin/runc', args: ['--root=/run/skiff/runc', '--systemd-cgroup', 'exec', 'id'] });
  assert.deepEqual(conmonRuntimeArgs(runc), ['--runtime', '/usr/sbin/runc', '--runtime-arg', '--root=/run/skiff/runc', '--runtime-arg', '--systemd-cgroup']);
});

test('a sandbox-kind runtime runs through the launcher, which is given its path first', () => {
  assert.deepEqual(runtimeCommand(runsc, ['exec', 'id']), {
    file: SANDBOX_RUNTIME_LAUNCHER,
    args: ['/usr/bin/runsc', '--root=/run/skiff/runtimes/runsc', '--platform=systrap', 'exec', 'id'],
  });
  assert.deepEqual(conmonRuntimeArgs(runsc), [
    '--runtime', SANDBOX_RUNTIME_LAUNCHER,
    '--runtime-arg', '/usr/bin/runsc',
    '--runtime-arg', '--root=/run/skiff/runtimes/runsc',
    '--runtime-arg', '--platform=systrap',
  ]);
});
