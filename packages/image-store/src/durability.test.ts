import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { DurabilityBatch } from './durability.js';
import { syncFilesystems } from './unpack/special-files.js';
import { tempDir } from './testing/fixtures.js';

/** The real sync, counted, with a hook that runs while a sync is under way. */
function countingSync(during?: () => void): { runs: string[][]; sync: (paths: readonly string[]) => Promise<void> } {
  const runs: string[][] = [];
  return {
    runs,
    sync: async (paths) => {
      runs.push([...paths]);
      during?.();
      await syncFilesystems(paths);
    },
  };
}

function twoDirs(): string[] {
  const root = tempDir('durability');
  const dirs = [join(root, 'blobs'), join(root, 'snapshots')];
  for (const dir of dirs) mkdirSync(dir);
  return dirs;
}

test('nothing published: flush syncs nothing', async () => {
  const counted = countingSync();
  const batch = new DurabilityBatch(twoDirs(), counted.sync);
  await batch.flush();
  assert.equal(counted.runs.length, 0);
});

test('many publications, then concurrent flushes: one sync, of one directory per filesystem', async () => {
  const dirs = twoDirs();
  const counted = countingSync();
  const batch = new DurabilityBatch(dirs, counted.sync);
  for (let i = 0; i < 6; i++) batch.notePublished();
  await Promise.all([batch.flush(), batch.flush(), batch.flush()]);
  assert.deepEqual(counted.runs, [[dirs[0]]], 'both directories are on one filesystem');
  await batch.flush();
  assert.equal(counted.runs.length, 1, 'already durable: no second sync');
});

test('content published while a sync runs is not covered by it: its flush waits for the next sync', async () => {
  let batch: DurabilityBatch | undefined;
  let second: Promise<void> | undefined;
  const counted = countingSync(() => {
    if (second) return;
    batch!.notePublished();
    second = batch!.flush();
  });
  batch = new DurabilityBatch(twoDirs(), counted.sync);
  batch.notePublished();
  await batch.flush();
  assert.equal(counted.runs.length, 1);
  await second;
  assert.equal(counted.runs.length, 2);
});

test('a failed sync fails its flush; a later flush syncs again', async () => {
  let fail = true;
  const runs: number[] = [];
  const batch = new DurabilityBatch(twoDirs(), async (paths) => {
    runs.push(paths.length);
    if (fail) throw new Error('sync -f failed: EIO');
    await syncFilesystems(paths);
  });
  batch.notePublished();
  await assert.rejects(batch.flush(), /EIO/);
  fail = false;
  await batch.flush();
  assert.equal(runs.length, 2);
});
