import { test } from 'node:test';
import assert from 'node:assert/strict';
import { RestartBackoff } from './backoff.js';

test('backoff doubles to a ceiling and resets after a long run', () => {
  const b = new RestartBackoff({ initialMs: 100, maxMs: 1000, resetAfterMs: 5000 });
  assert.deepEqual([b.next(0), b.next(10), b.next(10), b.next(10), b.next(10), b.next(10)], [100, 200, 400, 800, 1000, 1000]);
  assert.equal(b.next(6000), 100);
  assert.equal(b.next(1), 200);
});

test('the default policy is the documented one: 0.2 s doubling to 15 s while runs end within 5 s', () => {
  const b = new RestartBackoff();
  const quick = Array.from({ length: 9 }, () => b.next(4_999));
  assert.deepEqual(quick, [200, 400, 800, 1600, 3200, 6400, 12_800, 15_000, 15_000]);
  assert.equal(b.next(5_000), 200, 'a run of 5 s starts over');
  assert.equal(b.next(100), 400);
});
