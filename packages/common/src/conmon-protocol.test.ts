import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { conmonEnvironment, parseConmonMessage } from './conmon-protocol.js';

describe('conmonEnvironment', () => {
  it('drops socket activation and notify variables, keeps the rest, and names the pipes given', () => {
    const saved = { ...process.env };
    try {
      Object.assign(process.env, { NOTIFY_SOCKET: '/run/notify', LISTEN_PID: '1', LISTEN_FDS: '2', LISTEN_FDNAMES: 'a:b', SKIFF_KEEP: 'yes' });
      const env = conmonEnvironment({ sync: 3, start: 4, attach: 5 });
      for (const key of ['NOTIFY_SOCKET', 'LISTEN_PID', 'LISTEN_FDS', 'LISTEN_FDNAMES']) assert.equal(env[key], undefined, key);
      assert.equal(env['SKIFF_KEEP'], 'yes');
      assert.equal(env['_OCI_SYNCPIPE'], '3');
      assert.equal(env['_OCI_STARTPIPE'], '4');
      assert.equal(env['_OCI_ATTACHPIPE'], '5');
      assert.equal(conmonEnvironment()['_OCI_SYNCPIPE'], undefined);
      assert.equal(process.env['NOTIFY_SOCKET'], '/run/notify', "this process's own environment is left as it was");
    } finally {
      for (const key of Object.keys(process.env)) if (!(key in saved)) delete process.env[key];
      Object.assign(process.env, saved);
    }
  });
});

describe('parseConmonMessage', () => {
  it('reads a pid or an exit code under any of its names, with the failure message', () => {
    assert.deepEqual(parseConmonMessage('{"pid": 42}'), { value: 42 });
    assert.deepEqual(parseConmonMessage('{"exit_code": 3}'), { value: 3 });
    assert.deepEqual(parseConmonMessage('{"data": -1, "message": "boom"}'), { value: -1, message: 'boom' });
  });

  it('refuses a line that is not JSON, or has no value', () => {
    assert.throws(() => parseConmonMessage('nope'), /unreadable message: nope/);
    assert.throws(() => parseConmonMessage('{"other": 1}'), /no value/);
    assert.throws(() => parseConmonMessage('null'), /no value/);
  });
});
