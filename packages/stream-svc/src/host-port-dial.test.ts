import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:net';
import { HostPortConnection } from './host-port-dial.js';

function echoServer(host: string): Promise<Server> {
  const server = createServer((socket) => socket.pipe(socket));
  return new Promise((resolve) => server.listen(0, host, () => resolve(server)));
}

function portOf(server: Server): number {
  return (server.address() as { port: number }).port;
}

/** Sends `text`, half-closes, and answers what came back with the exit code and stderr. */
async function roundTrip(port: number, text: string): Promise<{ out: string; err: string; code: number | null }> {
  const conn = new HostPortConnection(port);
  let out = '';
  let err = '';
  conn.stdout.on('data', (c: Buffer) => (out += c.toString()));
  conn.stderr.on('data', (c: Buffer) => (err += c.toString()));
  const code = new Promise<number | null>((resolve) => conn.on('close', resolve));
  conn.stdin.end(text);
  const exitCode = await code;
  return { out, err, code: exitCode };
}

describe('dialling a port on the host network', () => {
  it('reaches a server on 127.0.0.1 and half-closes on the end of input', async () => {
    const server = await echoServer('127.0.0.1');
    try {
      assert.deepEqual(await roundTrip(portOf(server), 'hello'), { out: 'hello', err: '', code: 0 });
    } finally {
      server.close();
    }
  });

  it('falls back to ::1 when IPv4 refuses, as the kubelet does', async () => {
    const server = await echoServer('::1');
    try {
      assert.deepEqual(await roundTrip(portOf(server), 'six'), { out: 'six', err: '', code: 0 });
    } finally {
      server.close();
    }
  });

  it('reports a port nobody listens on with exit code 1', async () => {
    const server = await echoServer('127.0.0.1');
    const port = portOf(server);
    await new Promise((r) => server.close(r));
    const result = await roundTrip(port, 'x');
    assert.equal(result.code, 1);
    assert.match(result.err, new RegExp(`cannot connect to port ${port} on 127.0.0.1 or ::1`));
  });
});
