import { test } from 'node:test';
import assert from 'node:assert/strict';
import { parseAuthChallenges, challengesFromHeader } from './challenge.js';

test('parses a docker token challenge', () => {
  const [c, ...rest] = parseAuthChallenges(
    'Bearer realm="https://auth.docker.io/token",service="registry.docker.io",scope="repository:library/busybox:pull"',
  );
  assert.equal(rest.length, 0);
  assert.deepEqual(c, {
    scheme: 'bearer',
    params: { realm: 'https://auth.docker.io/token', service: 'registry.docker.io', scope: 'repository:library/busybox:pull' },
  });
});

test('handles escapes, commas inside quotes, spaces around = and mixed case', () => {
  const [c] = parseAuthChallenges('BEARER Realm = "https://a/t?x=1,y=2" , Service="say \\"hi\\"\\\\", error=insufficient_scope');
  assert.equal(c!.scheme, 'bearer');
  assert.deepEqual(c!.params, { realm: 'https://a/t?x=1,y=2', service: 'say "hi"\\', error: 'insufficient_scope' });
});

test('splits several challenges, with and without parameters', () => {
  const cs = parseAuthChallenges('Basic realm="Registry Realm", Bearer realm="https://t/token",service="reg", Negotiate, NTLM abc123==');
  assert.deepEqual(
    cs.map((c) => c.scheme),
    ['basic', 'bearer', 'negotiate', 'ntlm'],
  );
  assert.deepEqual(cs[0]!.params, { realm: 'Registry Realm' });
  assert.deepEqual(cs[1]!.params, { realm: 'https://t/token', service: 'reg' });
  assert.deepEqual(cs[2]!.params, {});
  assert.equal(cs[3]!.token68, 'abc123==');
});

test('repeated headers arrive as an array', () => {
  const cs = challengesFromHeader(['Basic realm="x"', 'Bearer realm="y"']);
  assert.deepEqual(cs.map((c) => c.params['realm']), ['x', 'y']);
  assert.deepEqual(challengesFromHeader(undefined), []);
});

test('rejects malformed headers', () => {
  assert.throws(() => parseAuthChallenges('Bearer realm="unterminated'), /unterminated/);
  assert.throws(() => parseAuthChallenges('Bearer realm="a" junk"'));
  assert.throws(() => parseAuthChallenges('=bad'));
});
