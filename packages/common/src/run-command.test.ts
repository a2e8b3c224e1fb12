import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { CommandTimeoutError, runCommand, runCommandsThroughSpawnServer, runReportingCommand, stopSpawnServer } from './run-command.js';
import { isProcessAlive } from './pid-file.js';

function behavesAsRunCommand(): void {
  it('collects output, exit code and stdin', async () => {
    const r = await runCommand('sh', ['-c', 'cat; echo err >&2; exit 3'], { input: 'in' });
    assert.deepEqual(r, { code: 3, signal: null, stdout: 'in', stderr: 'err\n' });
  });

  it('kills the child at the time limit', async () => {
    const started = Date.now();
    await assert.rejects(runCommand('sleep', ['60'], { timeoutMs: 200 }), CommandTimeoutError);
    assert.ok(Date.now() - started < 20_000);
  });

  it('does not wait for a background process that keeps the pipes open', async () => {
    const started = Date.now();
    const r = await runCommand('sh', ['-c', 'sleep 30 & echo done'], { drainAfterExitMs: 100 });
    assert.equal(r.stdout, 'done\n');
    assert.ok(Date.now() - started < 20_000, `took ${Date.now() - started} ms`);
  });

  it('rejects when the program does not exist', async () => {
    await assert.rejects(runCommand('/no/such/program', []), /cannot run \/no\/such\/program/);
  });

  it('reports a signal, passes the environment and discards output when asked', async () => {
    assert.deepEqual(await runCommand('sh', ['-c', 'kill -KILL $$']), { code: null, signal: 'SIGKILL', stdout: '', stderr: '' });
    assert.equal((await runCommand('sh', ['-c', 'echo $SKIFF_TEST_VALUE'], { env: { PATH: process.env['PATH'], SKIFF_TEST_VALUE: 'x y' } })).stdout, 'x y\n');
    assert.deepEqual(await runCommand('sh', ['-c', 'echo out; echo err >&2'], { discardOutput: true }), { code: 0, signal: null, stdout: '', stderr: '' });
  });

  it('gives the child default signal dispositions and binary-safe input', async () => {
    // SIGPIPE at its default kills `yes` when its reader goes away; ignored, it would loop on EPIPE.
    const r = await runCommand('sh', ['-c', 'yes | head -c 3 >/dev/null; grep SigIgn /proc/self/status'], { timeoutMs: 10_000 });
    assert.match(r.stdout, /SigIgn:\s+0+\n/);
    const input = Buffer.from([0, 255, 10, 128]);
    assert.equal((await runCommand('od', ['-An', '-tx1'], { input })).stdout.trim(), '00 ff 0a 80');
  });

  it('runs in the directory given', async () => {
    assert.equal((await runCommand('pwd', [], { cwd: '/usr/lib' })).stdout, '/usr/lib\n');
  });

  it('waits for the line a program reports on its pipe, even from a process it left behind', async () => {
    const reported = await runReportingCommand('sh', ['-c', 'echo out; printf "first\\nlater\\n" >&$REPORT_FD'], 'REPORT_FD');
    assert.deepEqual(reported, { code: 0, signal: null, stdout: 'out\n', stderr: '', report: 'first' });
    // conmon's way: the command exits at once; what it forked reports later and keeps the pipe open.
    const started = Date.now();
    const late = await runReportingCommand('sh', ['-c', '(sleep 0.2; sh -c \'echo "$$" >&$REPORT_FD; exec sleep 30\') >/dev/null 2>&1 &'], 'REPORT_FD', { timeoutMs: 20_000 });
    const holder = Number(late.report);
    try {
      assert.equal(late.code, 0);
      assert.ok(holder > 0 && isProcessAlive(holder), `the reporting process ${late.report} still holds the pipe`);
      assert.ok(Date.now() - started < 20_000, `took ${Date.now() - started} ms`);
    } finally {
      if (holder > 0) process.kill(holder, 'SIGKILL');
    }
    const silent = await runReportingCommand('sh', ['-c', 'echo nothing to report'], 'REPORT_FD');
    assert.equal(silent.report, undefined);
    await assert.rejects(runReportingCommand('sh', ['-c', '(exec sleep 30) >/dev/null 2>&1 &'], 'REPORT_FD', { timeoutMs: 300 }), CommandTimeoutError);
  });

  it('runs many commands at once', async () => {
    const results = await Promise.all(Array.from({ length: 20 }, (_, i) => runCommand('sh', ['-c', `echo ${i}`])));
    assert.deepEqual(results.map((r) => r.stdout), Array.from({ length: 20 }, (_, i) => `${i}\n`));
  });
}

describe('runCommand', () => {
  behavesAsRunCommand();
});

describe('runCommand through the spawn server', () => {
  before(() => assert.equal(runCommandsThroughSpawnServer(), true));
  after(() => stopSpawnServer());
  behavesAsRunCommand();
});
