import assert from 'node:assert/strict';
import { test } from 'node:test';
import { entryAtOrBefore } from './journal-position.js';

const cursor = (seqnumId: string, seqnum: number, realtime: number): string => `s=${seqnumId};i=${seqnum.toString(16)};b=6c7c6013a8674e3d8ba8b98c5c7c5a3d;m=5c4b6e2b7;t=${realtime.toString(16)};x=d6d7e2a4b1c26f6e`;
const entry = (c: string, realtimeMicros = 0n) => ({ cursor: c, realtimeMicros });

test('within one sequence entries are ordered by sequence number, whatever their times', () => {
  const at = { cursor: cursor('aa', 0x4ece7, 2_000) };
  assert.equal(entryAtOrBefore(entry(cursor('aa', 0x4ece7, 2_000)), at), true, 'the position itself');
  assert.equal(entryAtOrBefore(entry(cursor('aa', 0x4ece6, 9_000)), at), true, 'an earlier number, a later clock');
  assert.equal(entryAtOrBefore(entry(cursor('aa', 0x4ece8, 1_000)), at), false, 'a later number, an earlier clock');
});

test('across sequences (another journald), by time', () => {
  const at = { cursor: cursor('aa', 10, 2_000) };
  assert.equal(entryAtOrBefore(entry(cursor('bb', 99, 1_999)), at), true);
  assert.equal(entryAtOrBefore(entry(cursor('bb', 1, 2_001)), at), false);
});

test('before the first entry, by the second reading started from', () => {
  assert.equal(entryAtOrBefore(entry('', 1_699_999_999_999_999n), { sinceSeconds: 1_700_000_000 }), true);
  assert.equal(entryAtOrBefore(entry('', 1_700_000_000_000_000n), { sinceSeconds: 1_700_000_000 }), false);
});

test('a cursor that is not journald’s is an error, never a guess', () => {
  assert.throws(() => entryAtOrBefore(entry('nonsense'), { cursor: cursor('aa', 1, 1) }), /cannot order journal cursors/);
});
