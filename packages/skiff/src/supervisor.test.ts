import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PassThrough } from 'node:stream';
import { createLogger } from '@skiff/common';
import { Supervisor } from './supervisor.js';

test('a service that keeps dying at once is restarted after 0.2, 0.4, 0.8 and 1.6 s', async (t) => {
  const dir = await mkdtemp(join(tmpdir(), 'skiff-supervisor-'));
  t.after(() => rm(dir, { recursive: true, force: true }));
  const entry = join(dir, 'dies.mjs');
  await writeFile(entry, "console.log('started'); process.exit(1);\n");
  const output = new PassThrough();
  const starts: number[] = [];
  const fifthStart = new Promise<void>((resolve) =>
    output.on('data', (chunk: Buffer) => {
      for (const line of chunk.toString().split('\n')) if (line === 'started' && starts.push(performance.now()) === 5) resolve();
    }),
  );
  const spec = { name: 'dies', entry, endpoint: () => '', probe: async () => undefined };
  const supervisor = new Supervisor([spec], undefined, dir, output, createLogger('supervisor-test', 'fatal'));
  await supervisor.start();
  try {
    await fifthStart;
  } finally {
    await supervisor.stop();
  }
  // Each gap holds the backoff delay plus an exit and a node start; a timer never fires early
  // by more than a millisecond.
  const gaps = starts.slice(1).map((at, i) => at - starts[i]!);
  [200, 400, 800, 1600].forEach((delay, i) => assert.ok(gaps[i]! >= delay - 1, `restart ${i + 1} came after ${Math.round(gaps[i]!)} ms, not ${delay}`));
});
