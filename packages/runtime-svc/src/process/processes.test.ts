import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { awaitProcessesExit, findProcesses, parseProcStat, readProcess, readProcStat, signalSameProcess } from './processes.js';

test('parseProcStat reads ppid, process group and start time after a command name with spaces and parentheses', () => {
  const stat = '4242 (we (ird) name) S 1 4242 4242 0 -1 4194560 100 0 0 0 1 2 0 0 20 0 1 0 987654 1000 200 0 0 0';
  assert.deepEqual(parseProcStat(stat), { state: 'S', ppid: 1, pgid: 4242, startTime: 987654 });
  assert.equal(parseProcStat('garbage'), undefined);
});

test('signalSameProcess signals the process started at the given time, never another with its pid', async () => {
  const child = spawn('sleep', ['60'], { stdio: 'ignore' });
  const exited = once(child, 'exit');
  const pid = child.pid!;
  const startTime = readProcStat(pid)!.startTime;
  signalSameProcess(pid, startTime + 1, 'SIGKILL');
  assert.equal(readProcStat(pid)?.state !== undefined, true, 'a process of another start time is not signalled');
  assert.equal(child.exitCode, null);
  signalSameProcess(pid, startTime, 'SIGKILL');
  const [, signal] = await exited;
  assert.equal(signal, 'SIGKILL');
  signalSameProcess(pid, startTime, 'SIGKILL');
});

test('readProcess describes this process', async () => {
  const self = await readProcess(process.pid);
  assert.ok(self);
  assert.equal(self.ppid, process.ppid);
  assert.equal(self.argv[0], process.execPath);
});

test('awaitProcessesExit waits for a process that ends on its own, and kills one that does not', async () => {
  // Long enough to still run when a loaded machine gets to look for it, short against the grace period.
  const quick = spawn('sleep', ['5'], { stdio: 'ignore' });
  const stubborn = spawn('sleep', ['60'], { stdio: 'ignore' });
  // 'spawn' comes once the child has exec'd, so its command line is sleep's.
  await Promise.all([once(quick, 'spawn'), once(stubborn, 'spawn')]);
  const found = await findProcesses((p) => p.pid === quick.pid || p.pid === stubborn.pid, (argv) => argv[0] === 'sleep');
  assert.equal(found.length, 2);
  const stubbornExit = new Promise((resolve) => stubborn.once('exit', (_code, signal) => resolve(signal)));
  const killed = await awaitProcessesExit(found, 15_000);
  assert.equal(killed, 1);
  assert.equal(await stubbornExit, 'SIGKILL');
  assert.equal(await readProcess(stubborn.pid!), undefined);
});
