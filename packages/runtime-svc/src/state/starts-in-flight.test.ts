import assert from 'node:assert/strict';
import { test } from 'node:test';
import { StartsInFlight } from './starts-in-flight.js';

const settledWithin = async (p: Promise<void>, ms: number): Promise<boolean> =>
  Promise.race([p.then(() => true), new Promise<boolean>((resolve) => setTimeout(() => resolve(false), ms))]);

test('a status waits for the launch under way, and only for it', async () => {
  const starts = new StartsInFlight();
  assert.equal(await settledWithin(starts.settled('idle', 60_000), 1000), true, 'no launch: no wait');
  const end = starts.begin('a');
  const waiting = starts.settled('a', 60_000);
  assert.equal(await settledWithin(waiting, 200), false, 'waits while the launch runs');
  assert.equal(await settledWithin(starts.settled('b', 60_000), 1000), true, "another container's status does not wait");
  end();
  assert.equal(await settledWithin(waiting, 1000), true, 'answers once the launch ends');
  end();
  assert.equal(await settledWithin(starts.settled('a', 60_000), 1000), true, 'an ended launch is forgotten');
});

test('the wait is bounded, and a later launch of the same container is not ended by the earlier one', async () => {
  const starts = new StartsInFlight();
  const endFirst = starts.begin('a');
  assert.equal(await settledWithin(starts.settled('a', 50), 5000), true, 'gives up after its bound');
  const endSecond = starts.begin('a');
  endFirst();
  assert.equal(await settledWithin(starts.settled('a', 60_000), 200), false, 'the second launch still runs');
  endSecond();
  assert.equal(await settledWithin(starts.settled('a', 60_000), 1000), true);
});
