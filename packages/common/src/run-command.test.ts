import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { CommandTimeoutError, runCommand } from './run-command.js';

describe('runCommand', () => {
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
});
