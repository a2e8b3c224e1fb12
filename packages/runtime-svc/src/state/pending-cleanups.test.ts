import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { PendingCleanups } from './pending-cleanups.js';

function quietLog(): { warn: () => void; warnings: number } {
  const log = { warnings: 0, warn: () => void log.warnings++ };
  return log;
}

describe('cleanups after answered removals', () => {
  it("a sandbox's cleanup waits for those of its containers, not for other sandboxes'", async () => {
    const cleanups = new PendingCleanups(quietLog());
    const order: string[] = [];
    let releaseContainer!: () => void;
    let releaseOther!: () => void;
    cleanups.start('c1', 'pod', 'container c1', () => new Promise<void>((r) => (releaseContainer = r)).then(() => void order.push('c1')));
    cleanups.start('c2', 'other-pod', 'container c2', () => new Promise<void>((r) => (releaseOther = r)).then(() => void order.push('c2')));
    cleanups.start('pod', 'pod', 'pod sandbox', async () => {
      await cleanups.containersOf('pod');
      order.push('pod');
    });
    await new Promise((r) => setImmediate(r));
    assert.deepEqual(order, []);
    releaseContainer();
    await new Promise((r) => setTimeout(r, 10));
    assert.deepEqual(order, ['c1', 'pod']);
    assert.equal(cleanups.size, 1);
    releaseOther();
    await cleanups.idle();
    assert.deepEqual(order, ['c1', 'pod', 'c2']);
    assert.equal(cleanups.size, 0);
  });

  it('a failed cleanup is tried again, and logged', async () => {
    const log = quietLog();
    const cleanups = new PendingCleanups(log);
    let attempts = 0;
    cleanups.start('c', 'pod', 'container c', async () => {
      if (++attempts === 1) throw new Error('busy');
    });
    await cleanups.idle();
    assert.equal(attempts, 2);
    assert.equal(log.warnings, 1);
  });
});
