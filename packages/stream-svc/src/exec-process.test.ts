import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { pollUntil, readProcStat } from '@skiff/common/core';
import { killExecProcess } from './exec-process.js';

/** A shell of ours running `sleep` in the background; answers the shell and the sleep's pid. */
async function shellWithChild(): Promise<{ shell: ChildProcess; childPid: number }> {
  const shell = spawn('sh', ['-c', 'sleep 60 & echo $!; wait'], { stdio: ['ignore', 'pipe', 'ignore'] });
  const [line] = (await once(shell.stdout!, 'data')) as [Buffer];
  return { shell, childPid: Number(line.toString().trim()) };
}

function alive(pid: number): boolean {
  const stat = readProcStat(pid);
  return stat !== undefined && stat.state !== 'Z' && stat.state !== 'X';
}

async function gone(pid: number): Promise<boolean> {
  return (await pollUntil(async () => (alive(pid) ? undefined : true), 10_000, 20)) === true;
}

test('the exec process is killed while it is still the child of the runtime process we hold', async () => {
  const { shell, childPid } = await shellWithChild();
  try {
    assert.equal(killExecProcess(childPid, shell), true);
    assert.ok(await gone(childPid), 'the exec process still runs');
  } finally {
    shell.kill('SIGKILL');
  }
});

test('a pid that names another process by now (not a child of ours) is never signalled', async () => {
  const { shell, childPid } = await shellWithChild();
  // Another process with no tie to the shell: what a reused pid would be.
  const stranger = spawn('sleep', ['60'], { stdio: 'ignore' });
  try {
    assert.equal(killExecProcess(stranger.pid!, shell), false);
    assert.ok(alive(stranger.pid!), 'an unrelated process was killed');
    // Once the parent has exited, even its former child is left alone: its pid may be reused.
    shell.kill('SIGKILL');
    await once(shell, 'exit');
    assert.equal(killExecProcess(childPid, shell), false);
    assert.ok(alive(childPid));
  } finally {
    stranger.kill('SIGKILL');
    shell.kill('SIGKILL');
    try {
      process.kill(childPid, 'SIGKILL');
    } catch {
      // already gone
    }
  }
});
