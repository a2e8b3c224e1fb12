import assert from 'node:assert/strict';
import { test } from 'node:test';
import { exactNamesPattern, parseShard, shardOf } from './shards.js';

test('the shards deal out every spec once, whatever order the names come in', () => {
  const names = ['d', 'a', 'c', 'e', 'b'];
  const shards = [1, 2, 3].map((index) => shardOf(names, { index, count: 3 }));
  assert.deepEqual(shards, [['a', 'd'], ['b', 'e'], ['c']]);
  assert.deepEqual(shardOf([...names].reverse(), { index: 2, count: 3 }), ['b', 'e']);
});

test("a container's specs stay in one shard, the containers dealt out in turn", () => {
  const containerOf = (name: string): string => name.split(' ')[0]!;
  const names = ['ordered it-2', 'other x', 'ordered it-1', 'third y', 'other z'];
  const shards = [1, 2].map((index) => shardOf(names, { index, count: 2 }, containerOf));
  assert.deepEqual(shards, [['ordered it-1', 'ordered it-2', 'third y'], ['other x', 'other z']]);
});

test('K/N is checked', () => {
  assert.deepEqual(parseShard('2/5'), { index: 2, count: 5 });
  for (const bad of ['0/3', '4/3', '1/0', '1', 'a/b', '1/2/3']) assert.throws(() => parseShard(bad), /--shard takes K\/N/);
});

test('the pattern matches exactly the names given, brackets and dots literal, spaces as runs', () => {
  const pattern = new RegExp(exactNamesPattern(['[sig-node] Pods should be updated [NodeConformance]', 'a.b (c)']));
  assert.match('[sig-node] Pods  should be updated [NodeConformance]', pattern);
  assert.match('a.b (c)', pattern);
  assert.doesNotMatch('[sig-node] Pods should be updated [NodeConformance] and more', pattern);
  assert.match('E2eNode Suite [sig-node] Pods should be updated [NodeConformance]', pattern);
  assert.doesNotMatch('x[sig-node] Pods should be updated [NodeConformance]', pattern);
  assert.doesNotMatch('aXb (c)', pattern);
});
