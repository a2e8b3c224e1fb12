import { test } from 'node:test';
import assert from 'node:assert/strict';
import { PassThrough } from 'node:stream';
import { execConmonArgs, MessagePipe, parseConmonMessage } from './conmon-exec.js';

const base = {
  conmonPath: '/usr/bin/conmon',
  runtime: { path: '/usr/sbin/runc', root: '/run/skiff/runc', args: ['--systemd-cgroup'], kind: 'oci' as const },
  containerId: 'abc',
  sessionId: 'abc-exec-1',
  dir: '/run/skiff/stream/exec-1',
  processFile: '/run/skiff/stream/exec-1/process.json',
  pidFile: '/run/skiff/stream/exec-1/pid',
};

function valueOf(args: string[], flag: string): string | undefined {
  const i = args.indexOf(flag);
  return i < 0 ? undefined : args[i + 1];
}

test('an attached exec runs under conmon with its socket in the scratch directory', () => {
  const args = execConmonArgs({ ...base, terminal: true, stdin: true });
  for (const flag of ['--api-version', '--exec', '--exec-attach', '--full-attach', '--sync', '--terminal', '--stdin']) assert.ok(args.includes(flag), flag);
  assert.equal(valueOf(args, '--bundle'), base.dir);
  assert.equal(valueOf(args, '--exec-process-spec'), base.processFile);
  assert.equal(valueOf(args, '--container-pidfile'), base.pidFile);
  assert.equal(valueOf(args, '--cid'), 'abc');
  assert.deepEqual(args.filter((_, i) => args[i - 1] === '--runtime-arg'), ['--root=/run/skiff/runc', '--systemd-cgroup']);
  assert.ok(!args.includes('--exit-dir'), 'the container\'s exit file is not touched');
  assert.ok(!args.includes('--leave-stdin-open'), 'the end of client stdin closes the process\'s stdin');
  const quiet = execConmonArgs({ ...base, terminal: true, stdin: false });
  assert.ok(!quiet.includes('--stdin'));
});

test('conmon messages: pid and exit code, failures with their message', () => {
  assert.deepEqual(parseConmonMessage('{"data": 4242}'), { data: 4242 });
  assert.deepEqual(parseConmonMessage('{"data": -1, "message": "exec failed: no such file"}'), { data: -1, message: 'exec failed: no such file' });
  assert.equal(parseConmonMessage('{"exit_code": 3}').data, 3);
  assert.equal(parseConmonMessage('not json').data, -1);
  assert.match(parseConmonMessage('{"other": 1}').message ?? '', /no value/);
});

test('messages are read one at a time, across chunks, then undefined at the end', async () => {
  const pipe = new PassThrough();
  const messages = new MessagePipe(pipe);
  pipe.write('{"data": 12');
  const first = messages.next();
  pipe.write('3}\n{"data": 0}\n');
  assert.deepEqual(await first, { data: 123 });
  assert.deepEqual(await messages.next(), { data: 0 });
  const last = messages.next();
  pipe.end();
  assert.equal(await last, undefined);
  assert.equal(await messages.next(), undefined);
});
