import { test } from 'node:test';
import assert from 'node:assert/strict';
import { closeSync, openSync, readFileSync, writeSync } from 'node:fs';
import { join } from 'node:path';
import { EARLY_WRITEBACK_MIN_BYTES, EarlyWriteback } from './writeback.js';
import { tempDir } from './testing/fixtures.js';

test('each file handed over is written out and then closed, in turn; beyond the queue limit, closed at once', async () => {
  const dir = tempDir('writeback');
  const writeback = new EarlyWriteback();
  const closed: number[] = [];
  for (let i = 0; i < 70; i++) {
    const fd = openSync(join(dir, `f${i}`), 'wx', 0o600);
    writeSync(fd, `file ${i}`);
    writeback.submit(fd, EARLY_WRITEBACK_MIN_BYTES, () => {
      closed.push(i);
      closeSync(fd);
    });
  }
  // 64 wait their turn; the rest are closed without waiting.
  await Promise.resolve();
  assert.deepEqual(closed, [64, 65, 66, 67, 68, 69]);
  await writeback.idle();
  assert.deepEqual(closed.slice(6), Array.from({ length: 64 }, (_, i) => i), 'closed in order, after their data was written out');
  for (let i = 0; i < 70; i++) assert.equal(readFileSync(join(dir, `f${i}`), 'utf8'), `file ${i}`);
});

test('a file whose write-out fails is still closed', async () => {
  const writeback = new EarlyWriteback();
  let closed = false;
  writeback.submit(2_000_000, EARLY_WRITEBACK_MIN_BYTES, () => {
    closed = true;
  });
  await writeback.idle();
  assert.ok(closed);
});

test('a small file is closed at once, not written out on its own', async () => {
  const writeback = new EarlyWriteback();
  let closed = false;
  writeback.submit(2_000_000, EARLY_WRITEBACK_MIN_BYTES - 1, () => {
    closed = true;
  });
  assert.ok(closed);
});
