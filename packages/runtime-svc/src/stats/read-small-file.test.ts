import assert from 'node:assert/strict';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { readSmallFile } from './read-small-file.js';

test('a small file is read whole, short or long; a missing one is undefined', async () => {
  const dir = await mkdtemp(join(tmpdir(), 'skiff-read-file-'));
  try {
    const long = Array.from({ length: 5000 }, (_, i) => `${i}\n`).join('');
    await writeFile(join(dir, 'short'), '12345\n');
    await writeFile(join(dir, 'long'), long);
    assert.equal(await readSmallFile(join(dir, 'short')), '12345\n');
    assert.equal(await readSmallFile(join(dir, 'long')), long);
    assert.equal(await readSmallFile(join(dir, 'missing')), undefined);
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
});
