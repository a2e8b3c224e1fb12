import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { atomicWriteJson, readJsonIfExists, removeAtomicWriteDebris, replaceFileNow } from './atomic-file.js';

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

test('replaceFileNow: the new content is there when it resolves, and durable settles after', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'skiff-atomic-'));
  const path = join(dir, 'lease.json');
  writeFileSync(path, 'old');
  const { durable } = await replaceFileNow(path, 'new', 0o600);
  assert.equal(readFileSync(path, 'utf8'), 'new');
  await durable;
  assert.deepEqual(readdirSync(dir), ['lease.json']);
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
