import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { isProcessAlive } from '@skiff/common';
import { processExists } from './process-exists.js';

describe('processExists', () => {
  it('answers as isProcessAlive does, for live processes and for pids no process has', async () => {
    const sleeper = spawn('sleep', ['30']);
    const ended = spawn('true');
    await once(ended, 'exit');
    try {
      const live = [process.pid, process.ppid, 1, sleeper.pid!];
      const gone = [ended.pid!, 2 ** 22 + 1, 2 ** 30];
      for (const pid of live) assert.equal(processExists(pid), true, `pid ${pid}`);
      for (const pid of [...live, ...gone]) assert.equal(processExists(pid), isProcessAlive(pid), `pid ${pid}`);
      assert.equal(processExists(2 ** 30), false);
    } finally {
      sleeper.kill('SIGKILL');
    }
  });
});
