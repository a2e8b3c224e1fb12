import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { atomicWriteJson, readJsonIfExists, removeAtomicWriteDebris } from './atomic-file.js';

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

test('removeAtomicWriteDebris removes only the temp files of cut-short atomic writes', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'skiff-atomic-'));
  await atomicWriteJson(join(dir, 'kept.json'), { a: 1 });
  writeFileSync(join(dir, '.kept.json.0123456789ab.tmp'), '{"a":');
  writeFileSync(join(dir, '.hidden'), 'not ours');
  writeFileSync(join(dir, 'other.tmp'), 'not ours');
  assert.equal(await removeAtomicWriteDebris(dir), 1);
  assert.deepEqual(readdirSync(dir).sort(), ['.hidden', 'kept.json', 'other.tmp']);
  assert.equal(await removeAtomicWriteDebris(join(dir, 'missing')), 0);
});
