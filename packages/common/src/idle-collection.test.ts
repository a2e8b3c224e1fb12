import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { IdleCollectionSchedule, shouldCollect, type HeapFigures } from './idle-collection.js';

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

describe('the idle collection schedule', () => {
  const start = at(12, 10, 3);
  const burst = at(16, 12, 13);

  it('collects once after a burst that the collection gives back, then leaves the quiet daemon alone', () => {
    const schedule = new IdleCollectionSchedule(start, policy);
    assert.equal(schedule.look(at(20, 15, 20)), false, 'busy');
    assert.equal(schedule.look(burst), false, 'still moving');
    assert.equal(schedule.look(burst), true);
    schedule.collected(burst, at(12, 10, 3));
    for (let i = 0; i < 40; i++) assert.equal(schedule.look(at(12, 10, 3)), false);
  });

  it('tries again after 2, 4, 8 and 16 looks while memory is still held, then takes the size as normal', () => {
    const schedule = new IdleCollectionSchedule(start, policy);
    schedule.look(burst);
    const collections: number[] = [];
    for (let i = 0; i < 60; i++) {
      if (schedule.look(burst)) {
        collections.push(i);
        schedule.collected(burst, burst);
      }
    }
    assert.deepEqual(collections, [0, 2, 6, 14, 30]);
  });

  it('a retry that gives the memory back ends the retries', () => {
    const schedule = new IdleCollectionSchedule(start, policy);
    schedule.look(burst);
    assert.equal(schedule.look(burst), true);
    schedule.collected(burst, burst);
    assert.equal(schedule.look(burst), false);
    assert.equal(schedule.look(burst), true);
    schedule.collected(burst, at(12, 10, 3));
    for (let i = 0; i < 40; i++) assert.equal(schedule.look(at(12, 10, 3)), false);
  });
});
