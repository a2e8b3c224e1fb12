import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { RuntimePaths } from '../daemon/paths.js';
import { RecordStore, removeRecordDirectory } from './record-store.js';
import { containerRecordFixture } from './record-fixtures.js';
import type { ContainerRecord } from './records.js';

function exitedContainer(id: string): ContainerRecord {
  return containerRecordFixture(id, 'b'.repeat(64), 'exited', { exitCode: 0 });
}

test('a removal marker makes a record read back as removing; the directory goes record first', async (t) => {
  const root = await mkdtemp(join(tmpdir(), 'record-store-'));
  t.after(() => rm(root, { recursive: true, force: true }));
  const paths = new RuntimePaths(root, join(root, 'run'));
  const store = new RecordStore(paths);
  await store.init();
  const marked = exitedContainer('a'.repeat(64));
  const kept = exitedContainer('c'.repeat(64));
  for (const rec of [marked, kept]) {
    await mkdir(paths.container(rec.id).dir);
    await store.saveContainer(rec);
  }

  await store.markContainerRemoving(marked);
  assert.equal(marked.phase, 'removing');
  const phases = Object.fromEntries((await store.loadAll()).containers.map((c) => [c.id, c.phase]));
  assert.deepEqual(phases, { [marked.id]: 'removing', [kept.id]: 'exited' }, 'the marker, not the record file, says removing');

  // A removal cut short (here by an entry that cannot be removed) leaves no record behind.
  const pinned = join(paths.container(marked.id).dir, 'pinned');
  await mkdir(pinned);
  await writeFile(join(pinned, 'file'), '');
  execFileSync('chattr', ['+i', pinned]);
  try {
    await assert.rejects(removeRecordDirectory(paths.container(marked.id)));
  } finally {
    execFileSync('chattr', ['-i', pinned]);
  }
  assert.equal(existsSync(paths.container(marked.id).record), false, 'the record went first');
  assert.deepEqual((await store.loadAll()).strayDirs.map((d) => d.id), [marked.id], 'what is left is debris, not a container');
  await removeRecordDirectory(paths.container(marked.id));
  const after = await store.loadAll();
  assert.deepEqual(after.containers.map((c) => c.id), [kept.id]);
  assert.deepEqual(after.strayDirs, []);
});
