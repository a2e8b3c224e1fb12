import { test } from 'node:test';
import assert from 'node:assert/strict';
import { JsonObjectSplitter } from '../spdy-session.js';
import { negotiate, SPDY_REMOTE_COMMAND_PROTOCOLS } from './upgrade.js';

test('the client\'s first protocol we speak wins; no offer means the oldest; a miss is refused', () => {
  assert.deepEqual(negotiate(['v2.channel.k8s.io', 'v4.channel.k8s.io'], SPDY_REMOTE_COMMAND_PROTOCOLS), { ok: true, protocol: 'v2.channel.k8s.io' });
  assert.deepEqual(negotiate(['v9.channel.k8s.io', 'v4.channel.k8s.io'], SPDY_REMOTE_COMMAND_PROTOCOLS), { ok: true, protocol: 'v4.channel.k8s.io' });
  assert.deepEqual(negotiate([], SPDY_REMOTE_COMMAND_PROTOCOLS), { ok: true, protocol: undefined });
  assert.deepEqual(negotiate(['v5.channel.k8s.io'], SPDY_REMOTE_COMMAND_PROTOCOLS), { ok: false, offered: ['v5.channel.k8s.io'] });
});

test('resize messages split from a stream of JSON objects, across chunk boundaries', () => {
  const splitter = new JsonObjectSplitter();
  assert.deepEqual(splitter.push('{"Width":80,"Hei'), []);
  assert.deepEqual(splitter.push('ght":24}{"Width":100,"Height":40}\n{"Wi'), ['{"Width":80,"Height":24}', '{"Width":100,"Height":40}']);
  assert.deepEqual(splitter.push('dth":1,"Height":2}'), ['{"Width":1,"Height":2}']);
});
