import { test } from 'node:test';
import assert from 'node:assert/strict';
import { ContractViolation, parseStreamRequest, type StreamRequest } from '@skiff/common/core';
import { TokenStore, TooManyTokens } from './token-store.js';
import { statusFor } from './status-message.js';

const pf: StreamRequest = { kind: 'portforward', podSandboxId: 'p', netnsPath: '/x', hostNetwork: false, ports: [80] };

test('tokens are single use', () => {
  const store = new TokenStore();
  const token = store.issue(pf);
  assert.match(token, /^[A-Za-z0-9_-]{20,}$/);
  assert.deepEqual(store.take(token), pf);
  assert.equal(store.take(token), undefined);
  assert.equal(store.take('unknown'), undefined);
});

test('tokens expire after their time to live', () => {
  let now = 1000;
  const store = new TokenStore(60_000, 10, () => now);
  const token = store.issue(pf);
  now += 60_000;
  assert.equal(store.take(token), undefined);
});

test('at most max tokens are outstanding; expired ones free their place', () => {
  let now = 0;
  const store = new TokenStore(60_000, 2, () => now);
  store.issue(pf);
  store.issue(pf);
  assert.throws(() => store.issue(pf), TooManyTokens);
  now += 60_001;
  assert.doesNotThrow(() => store.issue(pf));
});

test('requests are validated like the kubelet does', () => {
  const exec = { kind: 'exec', containerId: 'c', cmd: ['sh'], runtime: { path: '/usr/sbin/runc', root: '/root', args: [], kind: 'oci' }, process: { user: { uid: 0, gid: 0 }, args: [], env: [], cwd: '/' } };
  assert.throws(() => parseStreamRequest({ ...exec, stdout: true, containerId: '' }), /container_id is required/);
  assert.throws(() => parseStreamRequest({ ...exec, tty: true, stdout: true, stderr: true }), /tty and stderr cannot both be true/);
  assert.throws(() => parseStreamRequest({ ...exec }), /one of stdin, stdout or stderr/);
  assert.throws(() => parseStreamRequest({ ...exec, cmd: [], stdout: true }), /cmd is required/);
  assert.throws(() => parseStreamRequest({ kind: 'other' }), ContractViolation);
  assert.equal(parseStreamRequest({ ...exec, stdin: true }).kind, 'exec');
});

test('exit codes become metav1.Status', () => {
  assert.equal(statusFor({ exitCode: 0 }, ['true'])['status'], 'Success');
  const failure = statusFor({ exitCode: 3 }, ['false']);
  assert.equal(failure['reason'], 'NonZeroExitCode');
  assert.deepEqual(failure['details'], { causes: [{ reason: 'ExitCode', message: '3' }] });
});
