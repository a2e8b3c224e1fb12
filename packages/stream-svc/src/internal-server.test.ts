import { test } from 'node:test';
import assert from 'node:assert/strict';
import { promises as fs } from 'node:fs';
import { request } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createLogger } from '@skiff/common/core';
import { startInternalServer } from './internal-server.js';
import { TokenStore } from './token-store.js';

function post(socketPath: string, body: unknown): Promise<{ status: number; body: { url?: string; message?: string } }> {
  return new Promise((resolve, reject) => {
    const req = request({ socketPath, path: '/v1/streams', method: 'POST', headers: { 'content-type': 'application/json' }, agent: false }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body: JSON.parse(Buffer.concat(chunks).toString()) }));
    });
    req.on('error', reject);
    req.end(JSON.stringify(body));
  });
}

test('the internal socket registers requests and answers 201, 400 and 429', async () => {
  const dir = await fs.mkdtemp(join(tmpdir(), 'skiff-stream-'));
  const socket = join(dir, 'internal.sock');
  const tokens = new TokenStore(60_000, 3);
  const app = await startInternalServer({ socket, tokens, baseUrl: () => 'http://127.0.0.1:1', log: createLogger('test', 'fatal') });
  try {
    assert.equal((await fs.stat(socket)).mode & 0o777, 0o600);
    const pf = { kind: 'portforward', podSandboxId: 'pod', netnsPath: '/run/netns/pod', hostNetwork: false, ports: [80] };
    const ok = await post(socket, pf);
    assert.equal(ok.status, 201);
    assert.match(ok.body.url ?? '', /^http:\/\/127\.0\.0\.1:1\/portforward\/[A-Za-z0-9_-]+$/);
    assert.equal((await post(socket, { kind: 'portforward', podSandboxId: 'pod', netnsPath: '/x', hostNetwork: false, ports: [0] })).status, 400);
    const tty = { kind: 'exec', containerId: 'c', cmd: ['sh'], runtime: { path: '/usr/sbin/runc', root: '/x', args: [], kind: 'oci' }, process: { user: { uid: 0, gid: 0 }, args: [], env: [], cwd: '/' }, tty: true, stdin: true, stdout: true };
    const ttyExec = await post(socket, tty);
    assert.equal(ttyExec.status, 201);
    assert.match(ttyExec.body.url ?? '', /\/exec\/[A-Za-z0-9_-]+$/);
    // conmon comes from stream-svc's own configuration; a request naming one breaks the contract.
    const conmon = await post(socket, { ...tty, conmonPath: '/tmp/conmon' });
    assert.equal(conmon.status, 400);
    assert.match(conmon.body.message ?? '', /conmonPath is not part of the request/);
    // The runtime travels whole: a handler's name alone is not enough to run it.
    const byName = await post(socket, { ...tty, runtime: { handler: 'runsc', root: '/x', args: [] } });
    assert.equal(byName.status, 400);
    assert.match(byName.body.message ?? '', /runtime\.handler is not part of the request/);
    const relative = await post(socket, { ...tty, runtime: { ...tty.runtime, path: 'runc' } });
    assert.match(relative.body.message ?? '', /Exec: runtime\.path must be an absolute path/);
    const kindless = await post(socket, { ...tty, runtime: { ...tty.runtime, kind: 'vm' } });
    assert.match(kindless.body.message ?? '', /Exec: runtime\.kind must be "oci" or "sandbox", got "vm"/);
    assert.match((await post(socket, { ...tty, cmd: 'sh' })).body.message ?? '', /Exec: cmd must be a list of strings/);
    const uidless = await post(socket, { ...tty, process: { ...tty.process, user: { uid: -1, gid: 0 } } });
    assert.equal(uidless.status, 400);
    assert.match(uidless.body.message ?? '', /Exec: process\.user\.uid must be an integer from 0 to 4294967295/);
    const attach = { kind: 'attach', containerId: 'c', attachSocket: '/run/a/c/attach', ctlFile: '/b/ctl', tty: false, stdout: true, stderr: true };
    const attached = await post(socket, attach);
    assert.equal(attached.status, 201);
    assert.match(attached.body.url ?? '', /\/attach\/[A-Za-z0-9_-]+$/);
    const full = await post(socket, pf);
    assert.equal(full.status, 429);
    assert.match(full.body.message ?? '', /3 streaming requests are waiting/);
  } finally {
    await app.close();
    await fs.rm(dir, { recursive: true, force: true });
  }
});
