import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { EventBus } from './event-bus.js';

describe('event bus', () => {
  it('delivers to every subscriber in order; a stalled one is cut off past its backlog while the others go on', () => {
    const bus = new EventBus<number>(3);
    const fast: number[] = [];
    const slow: number[] = [];
    let slowTakes = true;
    let overflowedAt = 0;
    bus.subscribe({ deliver: (e) => (fast.push(e), true), overflowed: () => assert.fail('the fast subscriber is never cut off') });
    const slowSub = bus.subscribe({
      deliver: (e) => {
        slow.push(e);
        return slowTakes;
      },
      overflowed: (n) => (overflowedAt = n),
    });
    bus.publish(1);
    slowTakes = false;
    bus.publish(2); // taken, but the subscriber is full now
    bus.publish(3);
    bus.publish(4);
    slowTakes = true;
    slowSub.resume();
    assert.deepEqual(slow, [1, 2, 3, 4]);
    slowTakes = false;
    bus.publish(5);
    for (const e of [6, 7, 8, 9]) bus.publish(e);
    assert.equal(overflowedAt, 4);
    assert.equal(bus.subscriberCount, 1);
    assert.deepEqual(fast, [1, 2, 3, 4, 5, 6, 7, 8, 9]);
  });

  it('forgets a subscriber that leaves', () => {
    const bus = new EventBus<number>(3);
    const got: number[] = [];
    const sub = bus.subscribe({ deliver: (e) => (got.push(e), true), overflowed: () => undefined });
    bus.publish(1);
    sub.unsubscribe();
    bus.publish(2);
    assert.deepEqual(got, [1]);
    assert.equal(bus.subscriberCount, 0);
  });
});
