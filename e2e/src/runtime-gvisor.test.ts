/**
 * gVisor as Skiff's second isolation level: pods with runtime_handler "runsc" run under gVisor's
 * own kernel (checked from inside), with the pod's network namespace and address, and everything a
 * kubelet does works as it does with runc.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { startRuntimeHarness, type Pod, type RuntimeHarness } from './lib/runtime-harness.js';

const HANDLER = 'runsc';

let h: RuntimeHarness;
let pod: Pod;
let counter = 0;

function name(base: string): string {
  return `${base}-${++counter}`;
}

before(async () => {
  h = await startRuntimeHarness();
  pod = await h.runPod({}, HANDLER);
});

after(async () => {
  await h?.stop();
});

describe('a gVisor pod', () => {
  test('runs its containers under the gVisor kernel, logs every line and keeps their exit code', async () => {
    const id = await h.runContainer(pod, name('kernel'), { command: ['sh', '-c', 'dmesg | head -n 1; uname -r; echo to-stderr >&2; exit 7'] });
    const exited = await h.waitForExit(id);
    assert.equal(exited.exit_code, 7);
    const log = readFileSync(exited.log_path, 'utf8');
    assert.match(log, /stdout F \[ *0\.0+\] Starting gVisor\.\.\./);
    assert.match(log, /stderr F to-stderr/);
    const release = /stdout F (\S+)\n/.exec(log.split('\n').slice(1).join('\n') + '\n')?.[1];
    assert.ok(release && release !== readFileSync('/proc/sys/kernel/osrelease', 'utf8').trim(), `uname -r inside is the host's: ${log}`);
  });
});
