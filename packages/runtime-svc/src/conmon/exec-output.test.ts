import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { runtimeServiceDefinition } from '@skiff/proto';
import { CRI_CLIENT_MESSAGE_LIMIT, EXEC_REPLY_OUTPUT_LIMIT, EXEC_TRUNCATED_NOTICE, fitExecReply } from './exec-output.js';

const MiB = 1024 * 1024;

function replyBytes(stdout: Buffer, stderr: Buffer, exitCode: number): number {
  return runtimeServiceDefinition.ExecSync.responseSerialize({ stdout, stderr, exit_code: exitCode }).length;
}

describe('ExecSync output in one reply', () => {
  it('passes output that fits through unchanged', () => {
    const stdout = Buffer.from([0xff, 0xfe, 0x0a]);
    const stderr = Buffer.from('err\n');
    assert.deepEqual(fitExecReply(stdout, stderr, false), { stdout, stderr, truncated: false });
    const exact = fitExecReply(Buffer.alloc(EXEC_REPLY_OUTPUT_LIMIT - 1, 'a'), Buffer.from('b'), false);
    assert.equal(exact.truncated, false);
    assert.ok(replyBytes(exact.stdout, exact.stderr, -1) <= CRI_CLIENT_MESSAGE_LIMIT);
  });

  it('cuts both streams together to what a 16 MiB message holds, exit code and all, and says so on stderr', () => {
    for (const [out, err] of [
      [17 * MiB, 0],
      [16 * MiB, 16 * MiB],
      [0, 20 * MiB],
      [EXEC_REPLY_OUTPUT_LIMIT, 1],
      [10 * MiB, 7 * MiB],
    ] as const) {
      const fitted = fitExecReply(Buffer.alloc(out, 'o'), Buffer.alloc(err, 'e'), false);
      assert.equal(fitted.truncated, true);
      assert.ok(fitted.stderr.toString('latin1').endsWith(EXEC_TRUNCATED_NOTICE), `${out}+${err}: the notice ends stderr`);
      for (const exitCode of [0, -1, 2 ** 31 - 1]) {
        const size = replyBytes(fitted.stdout, fitted.stderr, exitCode);
        assert.ok(size <= CRI_CLIENT_MESSAGE_LIMIT, `${out}+${err}, exit ${exitCode}: a reply of ${size} bytes`);
        assert.ok(size > CRI_CLIENT_MESSAGE_LIMIT - 64, `${out}+${err}: the reply is filled (${size} bytes)`);
      }
    }
  });

  it('gives each stream half while both are over, and one that needs less leaves the rest to the other', () => {
    const both = fitExecReply(Buffer.alloc(16 * MiB, 'o'), Buffer.alloc(16 * MiB, 'e'), false);
    assert.ok(Math.abs(both.stdout.length - (both.stderr.length - EXEC_TRUNCATED_NOTICE.length)) <= 1);
    const smallErr = fitExecReply(Buffer.alloc(17 * MiB, 'o'), Buffer.from('a warning'), false);
    assert.equal(smallErr.stderr.toString(), `a warning\n${EXEC_TRUNCATED_NOTICE}`);
    const smallOut = fitExecReply(Buffer.from('result\n'), Buffer.alloc(17 * MiB, 'e'), false);
    assert.equal(smallOut.stdout.toString(), 'result\n');
  });

  it('says output was cut when it was dropped before, even if what is left fits', () => {
    const fitted = fitExecReply(Buffer.from('y\n'.repeat(1000)), Buffer.alloc(0), true);
    assert.equal(fitted.truncated, true);
    assert.equal(fitted.stdout.length, 2000);
    assert.equal(fitted.stderr.toString(), EXEC_TRUNCATED_NOTICE);
  });
});
