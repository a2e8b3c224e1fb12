import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { atomicWriteJson, readJsonIfExists } from './atomic-file.js';

test('atomic writes replace the file and leave no temp file', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'skiff-atomic-'));
  const path = join(dir, 'state.json');
  assert.equal(await readJsonIfExists(path), undefined);
  await atomicWriteJson(path, { a: 1 });
  await atomicWriteJson(path, { a: 2 });
  assert.deepEqual(JSON.parse(readFileSync(path, 'utf8')), { a: 2 });
  assert.deepEqual(readdirSync(dir), ['state.json']);
  assert.equal(statSync(path).mode & 0o777, 0o600);
});
