import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { promises as fs } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { isProcessAlive } from '@skiff/common';
import { armExecDeadline } from './exec-deadline.js';

/**
 * Stands in for an exec's conmon: a process whose arguments name `spec` as its process spec,
 * with a child (the command) whose pid it writes to `pidFile`. Resolves with both pids.
 */
async function fakeExec(spec: string, pidFile: string): Promise<{ monitor: number; command: number; done: Promise<unknown> }> {
  const monitor = spawn('sh', ['-c', 'sleep 60 & echo $! > "$0"; wait', pidFile, '--exec-process-spec', spec], { stdio: 'ignore' });
  const done = new Promise((resolve) => monitor.on('exit', resolve));
  for (let i = 0; i < 200; i++) {
    const text = await fs.readFile(pidFile, 'utf8').catch(() => '');
    if (text.trim()) return { monitor: monitor.pid!, command: Number(text), done };
    await sleep(10);
  }
  throw new Error('the fake exec wrote no pid');
}

test('the deadline kills the command of its own exec, and not that of another', { timeout: 30_000 }, async () => {
  const dir = await fs.mkdtemp(join(tmpdir(), 'skiff-deadline-'));
  try {
    const own = await fakeExec(join(dir, 'own.json'), join(dir, 'own.pid'));
    const ownDeadline = armExecDeadline(100, join(dir, 'own.pid'), join(dir, 'own.json'), own.done);
    await own.done;
    assert.equal(ownDeadline.expired, true);
    assert.equal(isProcessAlive(own.command), false, 'the command was killed');

    const other = await fakeExec(join(dir, 'other.json'), join(dir, 'other.pid'));
    // The pid file names the other exec's command: it is not a child of this exec's conmon.
    const otherDeadline = armExecDeadline(100, join(dir, 'other.pid'), join(dir, 'own.json'), other.done);
    await sleep(500);
    assert.equal(otherDeadline.expired, true);
    assert.equal(isProcessAlive(other.command), true, 'a command of another exec is left alone');
    otherDeadline.cancel();
    process.kill(other.command, 'SIGKILL');
    await other.done;
  } finally {
    await fs.rm(dir, { recursive: true, force: true });
  }
});
