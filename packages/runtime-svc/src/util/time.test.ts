import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { compareNanos } from './time.js';

describe('CRI timestamps', () => {
  it('compares nanosecond timestamps beyond double precision', () => {
    assert.equal(compareNanos('1700000000000000001', '1700000000000000002'), -1);
    assert.equal(compareNanos('5', '5'), 0);
  });
});
