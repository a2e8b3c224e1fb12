import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { shouldCollect, type HeapFigures } from './idle-collection.js';

const MiB = 1024 * 1024;
const policy = { quietBytes: 1 * MiB, grownBytes: 4 * MiB };
const at = (total: number, used: number, external: number): HeapFigures => ({ total: total * MiB, used: used * MiB, external: external * MiB });

describe('collecting garbage when quiet', () => {
  const afterLast = at(12, 10, 3);

  it('collects once the daemon is quiet and its heap and buffers grew past the last collection', () => {
    assert.equal(shouldCollect(at(14, 12, 33), at(14, 12.2, 33), afterLast, policy), true);
  });

  it('leaves a busy daemon alone, however much it grew', () => {
    assert.equal(shouldCollect(at(14, 12, 20), at(16, 13, 33), afterLast, policy), false);
    // A scavenge between the two looks is activity too.
    assert.equal(shouldCollect(at(14, 13, 33), at(14, 11, 33), afterLast, policy), false);
  });

  it('leaves an idle daemon that has not grown alone', () => {
    assert.equal(shouldCollect(at(13, 10.5, 4), at(13, 10.6, 4), afterLast, policy), false);
  });

  it('counts committed heap growth without external growth, as after pod churn', () => {
    assert.equal(shouldCollect(at(22, 17, 3), at(22, 17.1, 3), afterLast, policy), true);
  });

  it('does not collect again once a collection has left the daemon at its new size', () => {
    const afterCollection = at(22, 17, 3);
    assert.equal(shouldCollect(at(22, 17, 3), at(22, 17.1, 3), afterCollection, policy), false);
  });
});
