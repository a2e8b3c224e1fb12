import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { status } from '@grpc/grpc-js';
import { createLogger, defaultConfig, StatusError } from '@skiff/common';
import type { RuntimeContext } from '../daemon/context.js';
import { retrackContainerLog, trackContainerLog } from './logs-client.js';

/** A context whose logs-svc is down (nothing listens on its socket): the log file is made here. */
function contextWithoutLogsService(dir: string): RuntimeContext {
  const config = defaultConfig();
  config.logs.internal_socket = join(dir, 'no-logs-svc.sock');
  return { config, log: createLogger('logs-client-test', 'fatal') } as unknown as RuntimeContext;
}

test('with logs-svc down, the empty log file is made, never through a link or into a FIFO', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'skiff-logs-client-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const ctx = contextWithoutLogsService(dir);
  const id = 'a'.repeat(64);

  const plain = join(dir, 'plain.log');
  assert.equal(await trackContainerLog(ctx, id, plain), 'file made here');
  assert.ok(statSync(plain).isFile());
  await retrackContainerLog(ctx, id, plain);

  const target = join(dir, 'victim');
  writeFileSync(target, 'keep me');
  const link = join(dir, 'link.log');
  symlinkSync(target, link);
  await assert.rejects(trackContainerLog(ctx, id, link), (err: unknown) => err instanceof StatusError && err.code === status.INVALID_ARGUMENT && /symbolic link/.test(err.message));
  assert.equal(readFileSync(target, 'utf8'), 'keep me');

  const fifo = join(dir, 'fifo.log');
  execFileSync('mkfifo', [fifo]);
  await assert.rejects(trackContainerLog(ctx, id, fifo), (err: unknown) => err instanceof StatusError && err.code === status.INVALID_ARGUMENT && /not a regular file/.test(err.message));
});
