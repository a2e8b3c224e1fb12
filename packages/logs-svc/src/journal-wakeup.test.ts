import assert from 'node:assert/strict';
import { mkdir, mkdtemp, rm, stat, utimes, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { test } from 'node:test';
import { JournalWakeup } from './journal-wakeup.js';

async function journalRoots(t: { after(fn: () => Promise<void>): void }): Promise<{ base: string; roots: string[]; machineIdFile: string }> {
  const base = await mkdtemp(join(tmpdir(), 'journal-wakeup-'));
  t.after(() => rm(base, { recursive: true, force: true }));
  const roots = [join(base, 'run'), join(base, 'var'), join(base, 'absent')];
  for (const dir of [join(roots[0]!, 'mine'), join(roots[0]!, 'other'), join(roots[1]!, 'mine')]) await mkdir(dir, { recursive: true });
  await writeFile(join(roots[1]!, 'mine.journal'), '');
  const machineIdFile = join(base, 'machine-id');
  await writeFile(machineIdFile, 'mine\n');
  return { base, roots, machineIdFile };
}

test("the journal directories are this machine's, in every root that exists", async (t) => {
  const { base, roots, machineIdFile } = await journalRoots(t);
  assert.deepEqual(await new JournalWakeup(roots, machineIdFile).directories(), [join(base, 'run', 'mine'), join(base, 'var', 'mine')]);
  const without = new JournalWakeup(roots, join(base, 'no-machine-id'));
  assert.deepEqual((await without.directories()).sort(), [join(base, 'run', 'mine'), join(base, 'run', 'other'), join(base, 'var', 'mine')]);
});

test('a wake-up touches the journal directories, and stops once the awaited outcome is settled', async (t) => {
  const { base, roots, machineIdFile } = await journalRoots(t);
  const dir = join(base, 'run', 'mine');
  const wakeup = new JournalWakeup(roots, machineIdFile);
  const past = new Date(Date.now() - 3_600_000);
  await utimes(dir, past, past);
  await wakeup.wake();
  assert.ok((await stat(dir)).mtimeMs > past.getTime() + 1_000, 'the directory was touched');

  let touches = 0;
  const counted = wakeup.wake.bind(wakeup);
  wakeup.wake = async () => {
    touches++;
    await counted();
  };
  await wakeup.wakeUntil(Promise.reject(new Error('expired')));
  assert.ok(touches <= 1, `settled at once: at most the first touch (${touches})`);
  touches = 0;
  const started = Date.now();
  let lastTouch = 0;
  wakeup.wake = async () => {
    touches++;
    lastTouch = Date.now() - started;
    await counted();
  };
  await wakeup.wakeUntil(sleep(1_000));
  assert.ok(touches > 3, `woken several times (${touches})`);
  assert.ok(lastTouch > 600, `still woken long after the first quick ones, until settled (last at ${lastTouch} ms)`);
});

test('kept awake, the followers are woken again and again until the latest time asked, then no more', async (t) => {
  const { roots, machineIdFile } = await journalRoots(t);
  const wakeup = new JournalWakeup(roots, machineIdFile);
  let touches = 0;
  const counted = wakeup.wake.bind(wakeup);
  wakeup.wake = async () => {
    touches++;
    await counted();
  };
  wakeup.keepAwakeFor(100);
  wakeup.keepAwakeFor(400);
  await sleep(200);
  const midway = touches;
  assert.ok(midway > 1, `woken several times (${midway})`);
  await sleep(400);
  const over = touches;
  assert.ok(over > midway, `the second call kept them awake past the first one's time (${midway}, then ${over})`);
  await sleep(150);
  assert.equal(touches, over, 'no wake-up once the time is over');
});
