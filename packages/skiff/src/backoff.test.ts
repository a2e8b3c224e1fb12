import { test } from 'node:test';
import assert from 'node:assert/strict';
import { RestartBackoff } from './backoff.js';

test('backoff doubles to a ceiling and resets after a long run', () => {
  const b = new RestartBackoff({ initialMs: 100, maxMs: 1000, resetAfterMs: 5000 });
  assert.deepEqual([b.next(0), b.next(10), b.next(10), b.next(10), b.next(10), b.next(10)], [100, 200, 400, 800, 1000, 1000]);
  assert.equal(b.next(6000), 100);
  assert.equal(b.next(1), 200);
});
