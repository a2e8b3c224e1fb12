import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { isProcessAlive } from './pid-file.js';

/** The answer of kill(pid, 0), the classic probe the fast path must agree with. */
function killProbe(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

describe('isProcessAlive', () => {
  it('answers as kill(pid, 0) does, for live processes and for pids no process has', async () => {
    const sleeper = spawn('sleep', ['30']);
    const ended = spawn('true');
    await once(ended, 'exit');
    try {
      const live = [process.pid, process.ppid, 1, sleeper.pid!];
      const gone = [ended.pid!, 2 ** 22 + 1, 2 ** 30];
      for (const pid of live) assert.equal(isProcessAlive(pid), true, `pid ${pid}`);
      for (const pid of [...live, ...gone]) assert.equal(isProcessAlive(pid), killProbe(pid), `pid ${pid}`);
      assert.equal(isProcessAlive(2 ** 30), false);
    } finally {
      sleeper.kill('SIGKILL');
    }
  });
});
