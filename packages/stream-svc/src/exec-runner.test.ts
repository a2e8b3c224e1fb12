import assert from 'node:assert/strict';
import { chmod, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { createLogger, isProcessAlive as alive, pollUntil } from '@skiff/common/core';
import { runExec } from './exec-runner.js';
import type { StreamSession } from './session.js';

/**
 * A runtime standing in for `runc exec`: it starts the process (a long sleep, its child, as runc's
 * exec'd process is), lets it print, and writes its pid file only a while later, as runc may.
 */
const LATE_PID_FILE_RUNTIME = `#!/bin/sh
while [ $# -gt 0 ]; do
  [ "$1" = --pid-file ] && pid_file=$2
  shift
done
sleep 1000 &
echo $! > "$CHILD_PID_FILE"
echo started
sleep 0.5
echo $! > "$pid_file"
wait
`;

test('a client gone before runc has written its pid file still has the process killed', { timeout: 20_000 }, async (t) => {
  const dir = await mkdtemp(join(tmpdir(), 'exec-runner-'));
  t.after(() => rm(dir, { recursive: true, force: true }));
  const runtime = join(dir, 'runtime');
  await writeFile(runtime, LATE_PID_FILE_RUNTIME);
  await chmod(runtime, 0o755);
  const childPidFile = join(dir, 'child-pid');
  process.env['CHILD_PID_FILE'] = childPidFile;
  t.after(() => delete process.env['CHILD_PID_FILE']);

  let clientGone: () => void = () => undefined;
  const session: StreamSession = {
    onStdin: () => undefined,
    onResize: () => undefined,
    onDrain: () => undefined,
    onClientGone: (handler) => (clientGone = handler),
    // The client leaves as soon as the process has printed.
    writeStdout: (chunk) => {
      if (chunk.toString().includes('started')) clientGone();
      return true;
    },
    writeStderr: () => true,
    finish: () => undefined,
  };
  const request = { kind: 'exec' as const, containerId: 'c1', cmd: ['sleep', '1000'], runtime: { path: runtime, root: dir, args: [], kind: 'oci' as const }, process: { user: { uid: 0, gid: 0 }, args: [], env: [], cwd: '/' }, tty: false, stdin: false, stdout: true, stderr: false };
  await runExec(request, '/bin/false', session, dir, createLogger('exec-runner-test', 'warn'));

  const child = Number((await readFile(childPidFile, 'utf8')).trim());
  t.after(() => {
    if (alive(child)) process.kill(child, 'SIGKILL');
  });
  const gone = await pollUntil(async () => (alive(child) ? undefined : true), 5_000, 20);
  assert.equal(gone, true, 'the exec process was killed, not left running once runc was');
});
