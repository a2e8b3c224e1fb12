import { test } from 'node:test';
import assert from 'node:assert/strict';
import { normalizeReference } from '@skiff/reference';
import { prefixMatchLength, resolveEndpoints } from './endpoints.js';
import { RegistryError } from './errors.js';
import { parseRegistriesConfig } from './registries-config.js';

const D = 'sha256:' + 'b'.repeat(64);

function endpoints(conf: string, image: string): string[] {
  return resolveEndpoints(parseRegistriesConfig(conf), normalizeReference(image)).map(
    (e) => `${e.mirror ? 'mirror ' : ''}${e.host}/${e.repository}@${e.reference}${e.insecure ? ' insecure' : ''}${e.plainHttp ? ' http' : ''}`,
  );
}

test('prefixes match whole components only', () => {
  assert.equal(prefixMatchLength('example.com/foo/bar:1', 'example.com/foo'), 15);
  assert.equal(prefixMatchLength('example.com/foobar:1', 'example.com/foo'), -1);
  assert.equal(prefixMatchLength('example.com/foo:1', 'example.com/foo'), 15);
  assert.equal(prefixMatchLength(`example.com/foo@${D}`, 'example.com/foo'), 15);
  assert.equal(prefixMatchLength('example.com:5000/foo', 'example.com'), -1);
  assert.equal(prefixMatchLength('example.com/foo:1', 'example.com/foo:1'), 17);
  assert.equal(prefixMatchLength('a.example.com/x', '*.example.com'), 13);
  assert.equal(prefixMatchLength('a.b.example.com/x', '*.example.com'), 15);
  assert.equal(prefixMatchLength('example.com/x', '*.example.com'), -1);
  assert.equal(prefixMatchLength('a.example.com:5000/x', '*.example.com'), -1);
});

test('no matching entry: the reference itself, with Docker Hub on its API host', () => {
  assert.deepEqual(endpoints('', 'busybox'), ['registry-1.docker.io/library/busybox@latest']);
  assert.deepEqual(endpoints('', 'quay.io/a/b:v1'), ['quay.io/a/b@v1']);
});

test('loopback registries use plain HTTP', () => {
  assert.deepEqual(endpoints('', 'localhost:5000/app:1'), ['localhost:5000/app@1 http']);
  assert.deepEqual(endpoints('', '127.0.0.1:5000/app:1'), ['127.0.0.1:5000/app@1 http']);
  assert.deepEqual(endpoints('', '127.9.8.7/app:1'), ['127.9.8.7/app@1 http']);
  assert.deepEqual(endpoints('', '[::1]:5000/app:1'), ['[::1]:5000/app@1 http']);
  assert.deepEqual(endpoints('', '128.0.0.1:5000/app:1'), ['128.0.0.1:5000/app@1']);
});

test('the man page example: mirrors in order, then the relocated origin', () => {
  const conf = `
[[registry]]
prefix = "example.com/foo"
location = "internal.example.net/bar"
[[registry.mirror]]
location = "example-mirror-0.local/mirror-for-foo"
[[registry.mirror]]
location = "example-mirror-1.local/mirrors/foo"
insecure = true
[[registry]]
location = "registry.com"
[[registry.mirror]]
location = "mirror.registry.com"
`;
  assert.deepEqual(endpoints(conf, 'example.com/foo/image:latest'), [
    'mirror example-mirror-0.local/mirror-for-foo/image@latest',
    'mirror example-mirror-1.local/mirrors/foo/image@latest insecure',
    'internal.example.net/bar/image@latest',
  ]);
  assert.deepEqual(endpoints(conf, 'registry.com/image:latest'), ['mirror mirror.registry.com/image@latest', 'registry.com/image@latest']);
  assert.deepEqual(endpoints(conf, 'example.com/other:1'), ['example.com/other@1']);
});

test('the longest matching prefix wins', () => {
  const conf = `
[[registry]]
location = "docker.io"
[[registry.mirror]]
location = "hub-mirror.local"
[[registry]]
prefix = "docker.io/library/busybox"
location = "busybox-mirror.local/bb"
`;
  assert.deepEqual(endpoints(conf, 'busybox:1.36'), ['busybox-mirror.local/bb@1.36']);
  assert.deepEqual(endpoints(conf, 'alpine:3'), ['mirror hub-mirror.local/library/alpine@3', 'registry-1.docker.io/library/alpine@3']);
});

test('pull-from-mirror and mirror-by-digest-only choose mirrors by reference kind', () => {
  const conf = `
[[registry]]
prefix = "registry.k8s.io"
location = "registry.k8s.io"
[[registry.mirror]]
location = "digests.local"
pull-from-mirror = "digest-only"
[[registry.mirror]]
location = "tags.local"
pull-from-mirror = "tag-only"
[[registry.mirror]]
location = "all.local"
[[registry]]
prefix = "quay.io"
mirror-by-digest-only = true
[[registry.mirror]]
location = "q.local"
`;
  assert.deepEqual(endpoints(conf, 'registry.k8s.io/pause:3.10'), [
    'mirror tags.local/pause@3.10',
    'mirror all.local/pause@3.10',
    'registry.k8s.io/pause@3.10',
  ]);
  assert.deepEqual(endpoints(conf, `registry.k8s.io/pause@${D}`), [
    `mirror digests.local/pause@${D}`,
    `mirror all.local/pause@${D}`,
    `registry.k8s.io/pause@${D}`,
  ]);
  assert.deepEqual(endpoints(conf, `registry.k8s.io/pause:3.10@${D}`)[0], `mirror digests.local/pause@${D}`);
  assert.deepEqual(endpoints(conf, 'quay.io/a/b:1'), ['quay.io/a/b@1']);
  assert.deepEqual(endpoints(conf, `quay.io/a/b@${D}`), [`mirror q.local/a/b@${D}`, `quay.io/a/b@${D}`]);
});

test('wildcard prefixes apply settings without rewriting, and mirrors replace the host', () => {
  const conf = `
[[registry]]
prefix = "*.corp.example"
insecure = true
[[registry.mirror]]
location = "cache.local/corp"
[[registry]]
prefix = "special.corp.example"
location = "special.corp.example"
`;
  assert.deepEqual(endpoints(conf, 'a.b.corp.example/team/app:2'), ['mirror cache.local/corp/team/app@2', 'a.b.corp.example/team/app@2 insecure']);
  assert.deepEqual(endpoints(conf, 'special.corp.example/app:2'), ['special.corp.example/app@2']);
});

test('a mirror with its own insecure [[registry]] table is insecure', () => {
  const conf = `
[[registry]]
location = "docker.io"
[[registry.mirror]]
location = "mirror.internal"
[[registry]]
location = "mirror.internal"
insecure = true
`;
  assert.deepEqual(endpoints(conf, 'nginx:1'), ['mirror mirror.internal/library/nginx@1 insecure', 'registry-1.docker.io/library/nginx@1']);
});

test('prefixes and locations with tags rewrite the tag', () => {
  const conf = `
[[registry]]
prefix = "example.com/app:old"
location = "example.com/app:new"
`;
  assert.deepEqual(endpoints(conf, 'example.com/app:old'), ['example.com/app@new']);
  assert.deepEqual(endpoints(conf, 'example.com/app:other'), ['example.com/app@other']);
});

test('blocked prefixes refuse the pull', () => {
  const conf = `
[[registry]]
prefix = "docker.io/evil"
blocked = true
`;
  assert.throws(
    () => endpoints(conf, 'docker.io/evil/miner:1'),
    (err: unknown) => err instanceof RegistryError && err.kind === 'blocked' && /docker\.io\/evil\/miner:1 is blocked.*"docker\.io\/evil"/.test(err.message),
  );
  assert.deepEqual(endpoints(conf, 'docker.io/evilish/x:1'), ['registry-1.docker.io/evilish/x@1']);
});
