import assert from 'node:assert/strict';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { waitForExitCode } from '../conmon/exit-file.js';
import { ExitWatchState } from './exit-watch-state.js';

test('a wait for an exit file ends when the watcher sees the file, not at the next poll', { timeout: 10_000 }, async (t) => {
  const exitDir = await mkdtemp(join(tmpdir(), 'exit-watch-'));
  t.after(() => rm(exitDir, { recursive: true, force: true }));
  const state = new ExitWatchState();
  const hourMs = 3_600_000;
  const waiting = waitForExitCode(exitDir, 'c1', hourMs, state.nextExitFile, hourMs);
  await new Promise((resolve) => setImmediate(resolve));
  await writeFile(join(exitDir, 'c1'), '137');
  state.exitFileAppeared('other');
  state.exitFileAppeared('c1');
  assert.equal(await waiting, 137);
});

test('a wait for an exit file still polls without a signal from the watcher, and gives up at its deadline', async (t) => {
  const exitDir = await mkdtemp(join(tmpdir(), 'exit-watch-'));
  t.after(() => rm(exitDir, { recursive: true, force: true }));
  const state = new ExitWatchState();
  const waiting = waitForExitCode(exitDir, 'c2', 10_000, state.nextExitFile, 5);
  await writeFile(join(exitDir, 'c2'), '0');
  assert.equal(await waiting, 0);
  assert.equal(await waitForExitCode(exitDir, 'c3', 20, state.nextExitFile, 5), undefined);
});
