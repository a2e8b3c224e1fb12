import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Semaphore } from './semaphore.js';
import { SingleFlight } from './single-flight.js';

test('semaphore never runs more than its limit', async () => {
  const s = new Semaphore(2);
  let active = 0;
  let peak = 0;
  await Promise.all(
    Array.from({ length: 10 }, () =>
      s.run(async () => {
        active += 1;
        peak = Math.max(peak, active);
        await new Promise((r) => setTimeout(r, 5));
        active -= 1;
      }),
    ),
  );
  assert.equal(peak, 2);
});

test('single flight shares one run per key', async () => {
  const sf = new SingleFlight<number>();
  let runs = 0;
  const op = async (): Promise<number> => {
    runs += 1;
    await new Promise((r) => setTimeout(r, 5));
    return 7;
  };
  assert.deepEqual(await Promise.all([sf.run('a', op), sf.run('a', op), sf.run('b', op)]), [7, 7, 7]);
  assert.equal(runs, 2);
  assert.equal(sf.size, 0);
});
