import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { httpCall, jsonBody, nobodyListens } from './http-call.js';

async function listen(server: Server, socketPath: string): Promise<void> {
  await new Promise<void>((resolve) => server.listen(socketPath, resolve));
}

describe('httpCall on a unix socket', () => {
  it('sends a JSON body and resolves with any answer, its status and body', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'http-call-'));
    const socketPath = join(dir, 'd.sock');
    const server = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        res.statusCode = req.url === '/missing' ? 404 : 201;
        res.setHeader('content-type', 'application/json');
        res.end(JSON.stringify({ method: req.method, url: req.url, type: req.headers['content-type'], got: Buffer.concat(chunks).toString('utf8') }));
      });
    });
    await listen(server, socketPath);
    try {
      const answer = await httpCall({ socketPath, path: '/v1/things' }, { method: 'POST', body: { a: 1 }, timeoutMs: 5_000 });
      assert.equal(answer.status, 201);
      assert.deepEqual(jsonBody(answer), { method: 'POST', url: '/v1/things', type: 'application/json', got: '{"a":1}' });
      const missing = await httpCall({ socketPath, path: '/missing' }, { method: 'DELETE', timeoutMs: 5_000 });
      assert.equal(missing.status, 404);
      assert.equal(jsonBody<{ got: string }>(missing)?.got, '');
    } finally {
      server.close();
      await rm(dir, { recursive: true, force: true });
    }
  });

  it('rejects with the errno of a socket nobody listens on, and with the timeout message', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'http-call-'));
    try {
      const missing = await httpCall({ socketPath: join(dir, 'none.sock'), path: '/' }, { method: 'GET', timeoutMs: 5_000 }).catch((err: unknown) => err);
      assert.equal((missing as NodeJS.ErrnoException).code, 'ENOENT');
      assert.ok(nobodyListens(missing));
      await writeFile(join(dir, 'plain'), '');
      const refused = await httpCall({ socketPath: join(dir, 'plain'), path: '/' }, { method: 'GET', timeoutMs: 5_000 }).catch((err: unknown) => err);
      assert.equal((refused as NodeJS.ErrnoException).code, 'ECONNREFUSED');
      assert.ok(nobodyListens(refused));
      assert.ok(!nobodyListens(new Error('no answer within 100 ms')));
      const socketPath = join(dir, 'silent.sock');
      const silent = createServer(() => undefined);
      await listen(silent, socketPath);
      try {
        await assert.rejects(httpCall({ socketPath, path: '/' }, { method: 'GET', timeoutMs: 100, timeoutMessage: 'silent did not answer' }), { message: 'silent did not answer' });
      } finally {
        silent.closeAllConnections();
        silent.close();
      }
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  it('answers undefined for a body that is not JSON', () => {
    assert.equal(jsonBody({ status: 204, body: Buffer.alloc(0) }), undefined);
  });
});
