import assert from 'node:assert/strict';
import { test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { isProcessAlive as alive } from './pid-file.js';
import { SpawnServer } from './spawn-server.js';

test('an idle spawn helper ends, and the next command starts a new one', async () => {
  const server = new SpawnServer(undefined, 100);
  try {
    const first = await server.run('/bin/echo', ['one'], {});
    assert.deepEqual(first, { result: { code: 0, signal: null, stdout: 'one\n', stderr: '' } });
    const pid = server.helperPid;
    assert.ok(pid !== undefined && alive(pid), 'the helper runs after a command');
    for (let i = 0; i < 100 && alive(pid); i++) await sleep(50);
    assert.equal(alive(pid), false, 'the helper ended once idle');
    assert.equal(server.helperPid, undefined);
    const second = await server.run('/bin/echo', ['two'], {});
    assert.deepEqual(second, { result: { code: 0, signal: null, stdout: 'two\n', stderr: '' } });
    assert.notEqual(server.helperPid, pid);
  } finally {
    server.close();
  }
});
