import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createServer, connect, type Socket } from 'node:net';
import { SpdyConnection } from './connection.js';
import { bindSocket } from './transports.js';

test('a SPDY connection with no traffic for the idle timeout is dropped', async () => {
  let closedWith = '';
  const closed = new Promise<void>((resolve) => {
    const server = createServer((socket: Socket) => {
      bindSocket(socket, Buffer.alloc(0), (transport) => new SpdyConnection(transport, { onStream: () => undefined, onClose: (reason) => ((closedWith = reason), resolve(), server.close()) }), 150);
    });
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as { port: number };
      const client = connect(port, '127.0.0.1');
      client.on('data', () => undefined);
      client.on('error', () => undefined);
    });
  });
  const started = performance.now();
  await closed;
  assert.equal(closedWith, 'idle timeout');
  assert.ok(performance.now() - started >= 100);
});
