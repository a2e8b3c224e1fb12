import { test } from 'node:test';
import assert from 'node:assert/strict';
import { closeSync, openSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import { FileAppender } from './file-writer.js';
import { tempDir } from '../testing/fixtures.js';

test('chunks written while others are queued land in order, whole', async () => {
  const path = join(tempDir('appender'), 'blob');
  const fd = openSync(path, 'wx', 0o600);
  const chunks = Array.from({ length: 300 }, (_, i) => randomBytes(1 + ((i * 7919) % 70_000)));
  try {
    // A small limit makes the writer ask for waits now and then; most writes are queued.
    const appender = new FileAppender(fd, 256 * 1024);
    let waits = 0;
    for (const chunk of chunks) {
      const wait = appender.write(chunk);
      if (wait) {
        waits++;
        await wait;
      }
    }
    await appender.flush();
    assert.ok(waits > 0, 'backpressure was applied');
  } finally {
    closeSync(fd);
  }
  assert.ok(readFileSync(path).equals(Buffer.concat(chunks)));
});

test('a failed write is reported by the next write or flush, never lost', async () => {
  const path = join(tempDir('appender'), 'read-only');
  closeSync(openSync(path, 'w'));
  const fd = openSync(path, 'r');
  try {
    const appender = new FileAppender(fd);
    assert.equal(appender.write(Buffer.from('x')), undefined, 'queued without a wait');
    await assert.rejects(appender.flush(), { code: 'EBADF' });
    await assert.rejects(appender.write(Buffer.from('y'))!, { code: 'EBADF' });
  } finally {
    closeSync(fd);
  }
});

test('small writes are gathered into one until 256 KiB are queued; flush writes the rest', async () => {
  const path = join(tempDir('appender'), 'gathered');
  const fd = openSync(path, 'wx', 0o600);
  try {
    const appender = new FileAppender(fd);
    const small = [randomBytes(1000), randomBytes(2000)];
    for (const chunk of small) assert.equal(appender.write(chunk), undefined);
    assert.equal(readFileSync(path).length, 0, 'nothing written yet');
    await appender.flush();
    assert.ok(readFileSync(path).equals(Buffer.concat(small)));
  } finally {
    closeSync(fd);
  }
});
