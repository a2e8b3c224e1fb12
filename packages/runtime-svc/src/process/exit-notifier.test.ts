import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { readProcStat } from './processes.js';
import { ExitNotifier } from './exit-notifier.js';

describe('exit notifier', () => {
  it('tells of the exit of a process it follows, at once for one that is not the process it was told of', async () => {
    const exited: string[] = [];
    let heard: () => void = () => undefined;
    const notifier = new ExitNotifier(
      (key) => {
        exited.push(key);
        heard();
      },
      (message) => assert.fail(message),
    );
    const sleeper = spawn('sleep', ['100'], { stdio: 'ignore' });
    // The notifier's helper does not hold the event loop open (it must not keep runtime-svc
    // from exiting); once the sleeper is reaped, this keeps the test waiting for its report.
    const keepAlive = setInterval(() => undefined, 1000);
    try {
      const startTime = readProcStat(sleeper.pid!)!.startTime;
      const next = (): Promise<void> => new Promise((resolve) => (heard = resolve));
      let heardOne = next();
      notifier.sync(new Map([['recycled', { pid: sleeper.pid!, startTime: startTime + 1 }]]));
      await heardOne;
      assert.deepEqual(exited, ['recycled']);
      heardOne = next();
      notifier.sync(new Map([['sleeper', { pid: sleeper.pid!, startTime }]]));
      // Followed before it is killed: the sync is written before the kill.
      await new Promise((r) => setTimeout(r, 200));
      assert.deepEqual(exited, ['recycled']);
      sleeper.kill('SIGKILL');
      await heardOne;
      assert.deepEqual(exited, ['recycled', 'sleeper']);
    } finally {
      clearInterval(keepAlive);
      sleeper.kill('SIGKILL');
      notifier.close();
    }
  });

  it('runs no helper while there is nothing to follow', async () => {
    const children = (): string[] => readFileSync(`/proc/${process.pid}/task/${process.pid}/children`, 'utf8').trim().split(' ').filter(Boolean);
    const commandLine = (pid: string): string => {
      try {
        return readFileSync(`/proc/${pid}/cmdline`, 'utf8');
      } catch {
        return '';
      }
    };
    const helpers = (): string[] => children().filter((pid) => commandLine(pid).includes('pidfd-watch'));
    const noHelperLeft = async (): Promise<void> => {
      for (let i = 0; i < 100 && helpers().length > 0; i++) await new Promise((r) => setTimeout(r, 50));
    };
    await noHelperLeft(); // the test above's
    const notifier = new ExitNotifier(
      () => undefined,
      (message) => assert.fail(message),
    );
    const sleeper = spawn('sleep', ['100'], { stdio: 'ignore' });
    try {
      notifier.sync(new Map());
      assert.deepEqual(helpers(), [], 'no helper for an empty set');
      notifier.sync(new Map([['sleeper', { pid: sleeper.pid!, startTime: readProcStat(sleeper.pid!)!.startTime }]]));
      assert.equal(helpers().length, 1, 'a helper once there is a process to follow');
      notifier.sync(new Map());
      await noHelperLeft();
      assert.deepEqual(helpers(), [], 'the helper ends when the last process is no longer followed');
    } finally {
      sleeper.kill('SIGKILL');
      notifier.close();
    }
  });
});
