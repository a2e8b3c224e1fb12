import { test } from 'node:test';
import assert from 'node:assert/strict';
import { normalizeReference, parseReference, formatReference, InvalidReferenceError, familiarName, isImageId } from './index.js';

const D = 'sha256:' + 'a'.repeat(64);

test('normalizes docker hub short names', () => {
  assert.equal(formatReference(normalizeReference('busybox')), 'docker.io/library/busybox:latest');
  assert.equal(formatReference(normalizeReference('library/busybox:1.36')), 'docker.io/library/busybox:1.36');
  assert.equal(formatReference(normalizeReference('user/app')), 'docker.io/user/app:latest');
  assert.equal(formatReference(normalizeReference('index.docker.io/user/app')), 'docker.io/user/app:latest');
});

test('keeps registry hosts, ports and digests', () => {
  assert.deepEqual(parseReference('127.0.0.1:5000/a/b:v1'), { domain: '127.0.0.1:5000', path: 'a/b', name: '127.0.0.1:5000/a/b', tag: 'v1' });
  assert.deepEqual(parseReference(`localhost/app@${D}`), { domain: 'localhost', path: 'app', name: 'localhost/app', digest: D });
  assert.equal(formatReference(normalizeReference(`registry.k8s.io/pause:3.10@${D}`)), `registry.k8s.io/pause:3.10@${D}`);
  assert.equal(formatReference(normalizeReference(`busybox@${D}`)), `docker.io/library/busybox@${D}`);
  assert.equal(parseReference('[::1]:5000/x').domain, '[::1]:5000');
});

test('rejects malformed references with a reason', () => {
  for (const bad of ['', 'docker.io/Upper', 'busybox:', 'a b', 'busybox@sha256:abc', 'host:port/x', '-lead', 'a//b', `x:${'t'.repeat(129)}`, 'registry.io:99x/a']) {
    assert.throws(() => parseReference(bad), InvalidReferenceError, bad);
  }
});

test('familiar names and image ids', () => {
  assert.equal(familiarName(parseReference('busybox')), 'busybox');
  assert.equal(familiarName(parseReference('quay.io/a/b')), 'quay.io/a/b');
  assert.ok(isImageId('a'.repeat(64)));
  assert.ok(isImageId(D));
  assert.ok(!isImageId('busybox'));
});
