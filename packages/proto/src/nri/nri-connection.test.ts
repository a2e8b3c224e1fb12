import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer, connect, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { MUX_HEADER_BYTES, MUX_WRITE_CHUNK_BYTES, MuxConnId } from './mux.js';
import { NriConnection } from './nri-connection.js';
import { TTRPC_MAX_PAYLOAD_BYTES, TtrpcMessageType, encodeTtrpcFrame } from './ttrpc-frame.js';
import { encodeTtrpcRequest } from './ttrpc-messages.js';
import { MAX_CONCURRENT_INBOUND_REQUESTS, TtrpcCallError, TtrpcCode } from './ttrpc-peer.js';

const dir = mkdtempSync(join(tmpdir(), 'nri-conn-'));
after(() => rmSync(dir, { recursive: true, force: true }));
let socketCount = 0;

/** Two ends of one real unix connection. */
async function socketPair(): Promise<[Socket, Socket]> {
  const path = join(dir, `s${socketCount++}.sock`);
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(path, resolve));
  const accepted = new Promise<Socket>((resolve) => server.once('connection', resolve));
  const client = connect(path);
  await new Promise<void>((resolve) => client.once('connect', resolve));
  const peer = await accepted;
  server.close();
  return [client, peer];
}

async function connectedPair(): Promise<{ runtime: NriConnection; plugin: NriConnection; raw: Socket }> {
  const [a, b] = await socketPair();
  return { runtime: new NriConnection(a, 'runtime'), plugin: new NriConnection(b, 'plugin'), raw: b };
}

function closed(connection: NriConnection): Promise<Error | null> {
  return new Promise((resolve) => connection.onClose(resolve));
}

function muxChunk(id: number, payload: Buffer, announced = payload.length): Buffer {
  const header = Buffer.alloc(8);
  header.writeUInt32BE(id, 0);
  header.writeUInt32BE(announced, 4);
  return Buffer.concat([header, payload]);
}

test('a plugin registers and the runtime configures it, both ways on one connection', async () => {
  const { runtime, plugin } = await connectedPair();
  const registered: string[] = [];
  runtime.serveRuntime('RegisterPlugin', async (request) => {
    registered.push(`${request.plugin_idx}-${request.plugin_name}@${request.NRI_version}`);
    return {};
  });
  plugin.servePlugin('Configure', async (request) => {
    assert.equal(request.runtime_name, 'skiff');
    assert.equal(request.request_timeout, '2000');
    return { events: (1 << 1) | (1 << 4) };
  });
  await plugin.callRuntime('RegisterPlugin', { plugin_name: 'logger', plugin_idx: '10', NRI_version: 'v0.12.5' }, 1000);
  assert.deepEqual(registered, ['10-logger@v0.12.5']);
  const configured = await runtime.callPlugin('Configure', { runtime_name: 'skiff', request_timeout: 2000 }, 1000);
  assert.equal(configured.events, 18);
  runtime.close();
});

test('concurrent calls are answered each on its own stream, a large message included', async () => {
  const { runtime, plugin } = await connectedPair();
  plugin.servePlugin('CreateContainer', async (request) => {
    await new Promise((resolve) => setTimeout(resolve, request.container?.name === 'slow' ? 30 : 0));
    return { adjust: { annotations: { who: request.container?.name ?? '', big: request.container?.annotations.big ?? '' } } };
  });
  const big = 'x'.repeat(3 << 20);
  const names = ['slow', 'a', 'b', 'c'];
  const replies = await Promise.all(
    names.map((name) => runtime.callPlugin('CreateContainer', { container: { name, annotations: name === 'c' ? { big } : {} } }, 5000)),
  );
  assert.deepEqual(
    replies.map((r) => r.adjust?.annotations.who),
    names,
  );
  assert.equal(replies[3]!.adjust?.annotations.big.length, big.length);
  runtime.close();
});

test("a large message is written as its first 4096 bytes, which a Go plugin's read buffer holds, then the rest in one chunk, as Go's ttrpc writes it", async () => {
  const [a, raw] = await socketPair();
  const runtime = new NriConnection(a, 'runtime');
  after(() => runtime.close());
  const received: Buffer[] = [];
  raw.on('data', (chunk: Buffer) => received.push(chunk));
  void runtime.callPlugin('Configure', { config: 'x'.repeat(20_000) }, 200).catch(() => {});
  await new Promise((resolve) => setTimeout(resolve, 100));
  const stream = Buffer.concat(received);
  const sizes: number[] = [];
  for (let offset = 0; offset < stream.length; offset += MUX_HEADER_BYTES + sizes[sizes.length - 1]!) {
    assert.equal(stream.readUInt32BE(offset), MuxConnId.PluginService);
    sizes.push(stream.readUInt32BE(offset + 4));
  }
  assert.ok(sizes.reduce((sum, n) => sum + n, 0) > 20_000);
  // The first chunk fits ttrpc's 4096-byte read buffer; the rest goes in one, never as many small
  // chunks (the Go multiplexer queues at most 256 ahead of its reader).
  assert.equal(sizes.length, 2, `chunks of ${sizes.join(', ')} bytes`);
  assert.equal(sizes[0], MUX_WRITE_CHUNK_BYTES);
  raw.destroy();
});

test('a chunk header is written on its own beside its part: a large message is never copied in behind its headers', async () => {
  const [a, raw] = await socketPair();
  const writes: number[] = [];
  const write = a.write.bind(a) as (chunk: Buffer) => boolean;
  a.write = ((chunk: Buffer) => {
    writes.push(chunk.length);
    return write(chunk);
  }) as typeof a.write;
  const runtime = new NriConnection(a, 'runtime');
  after(() => runtime.close());
  let received = 0;
  raw.on('data', (chunk: Buffer) => (received += chunk.length));
  void runtime.callPlugin('Configure', { config: 'x'.repeat(20_000) }, 200).catch(() => {});
  await new Promise((resolve) => setTimeout(resolve, 100));
  assert.deepEqual(writes.slice(0, 3), [MUX_HEADER_BYTES, MUX_WRITE_CHUNK_BYTES, MUX_HEADER_BYTES]);
  assert.equal(received, writes.reduce((sum, n) => sum + n, 0));
  raw.destroy();
});

test('a method nobody serves is answered Unimplemented; a handler error carries its message', async () => {
  const { runtime, plugin } = await connectedPair();
  plugin.servePlugin('StopContainer', async () => {
    throw new Error('cannot stop this one');
  });
  await assert.rejects(runtime.callPlugin('Synchronize', {}, 1000), (err: TtrpcCallError) => err.code === TtrpcCode.Unimplemented);
  await assert.rejects(runtime.callPlugin('StopContainer', {}, 1000), (err: TtrpcCallError) => err.message === 'cannot stop this one');
  runtime.close();
});

test('a call the peer never answers fails with DeadlineExceeded and the connection stays usable', async () => {
  const { runtime, plugin } = await connectedPair();
  plugin.servePlugin('RunPodSandbox', () => new Promise(() => {}));
  plugin.servePlugin('StopPodSandbox', async () => ({}));
  await assert.rejects(runtime.callPlugin('RunPodSandbox', { pod: { id: 'p' } }, 50), (err: TtrpcCallError) => err.code === TtrpcCode.DeadlineExceeded);
  assert.deepEqual(await runtime.callPlugin('StopPodSandbox', {}, 1000), {});
  runtime.close();
});

test('a peer that goes away mid-call fails the call with Unavailable', async () => {
  const { runtime, plugin, raw } = await connectedPair();
  plugin.servePlugin('RemoveContainer', async () => {
    raw.destroy();
    return new Promise(() => {});
  });
  await assert.rejects(runtime.callPlugin('RemoveContainer', {}, 5000), (err: TtrpcCallError) => err.code === TtrpcCode.Unavailable);
});

for (const [what, bytes] of [
  ['a ttrpc header announcing more than 4 MiB', () => muxChunk(MuxConnId.RuntimeService, Buffer.from([0xff, 0xff, 0xff, 0xff, 0, 0, 0, 1, 1, 0]))],
  ['a multiplexed chunk announcing more than a whole message', () => muxChunk(MuxConnId.RuntimeService, Buffer.alloc(0), TTRPC_MAX_PAYLOAD_BYTES + 11)],
  ['data for a connection id that does not exist', () => muxChunk(7, Buffer.from('hello'))],
  ['a ttrpc message of unknown type', () => muxChunk(MuxConnId.RuntimeService, encodeTtrpcFrame(1, 9 as TtrpcMessageType, Buffer.alloc(0)))],
  ['a request that is not protobuf', () => muxChunk(MuxConnId.RuntimeService, encodeTtrpcFrame(1, TtrpcMessageType.Request, Buffer.from([0xff, 0xff, 0xff])))],
  ['a request on an even stream id', () => muxChunk(MuxConnId.RuntimeService, encodeTtrpcFrame(2, TtrpcMessageType.Request, encodeTtrpcRequest({ service: 's', method: 'm', payload: new Uint8Array(), timeoutNanos: 0 })))],
] as const) {
  test(`the runtime disconnects a peer that sends ${what}`, async () => {
    const [runtimeSocket, rawPeer] = await socketPair();
    const runtime = new NriConnection(runtimeSocket, 'runtime');
    runtime.serveRuntime('RegisterPlugin', async () => ({}));
    const reason = closed(runtime);
    const peerClosed = new Promise((resolve) => rawPeer.once('close', resolve));
    rawPeer.on('error', () => {});
    rawPeer.write(bytes());
    assert.ok((await reason) instanceof Error);
    await peerClosed;
  });
}

test('a request the handler cannot decode is answered InvalidArgument', async () => {
  const { runtime, plugin } = await connectedPair();
  runtime.serveRuntime('RegisterPlugin', async () => ({}));
  const payload = Buffer.from([0x0f]); // wire type 7 does not exist
  const answer = new Promise<Buffer>((resolve) => plugin.mux.channel(MuxConnId.RuntimeService).onData(resolve));
  plugin.mux.channel(MuxConnId.RuntimeService).write(
    encodeTtrpcFrame(1, TtrpcMessageType.Request, encodeTtrpcRequest({ service: 'nri.pkg.api.v1alpha1.Runtime', method: 'RegisterPlugin', payload, timeoutNanos: 0 })),
  );
  const reply = await answer;
  assert.equal(reply.readUInt8(8), TtrpcMessageType.Response);
  assert.match(reply.subarray(10).toString('latin1'), /malformed RegisterPlugin request/);
  runtime.close();
});

test('a flood of requests beyond the concurrency bound disconnects the peer', async () => {
  const { runtime, plugin } = await connectedPair();
  runtime.serveRuntime('UpdateContainers', () => new Promise(() => {}));
  const reason = closed(runtime);
  const calls = Array.from({ length: MAX_CONCURRENT_INBOUND_REQUESTS + 1 }, () => plugin.callRuntime('UpdateContainers', {}, 10_000).catch((err: unknown) => err));
  assert.match(String((await reason)?.message), /requests in flight/);
  for (const outcome of await Promise.all(calls)) assert.ok(outcome instanceof TtrpcCallError && outcome.code === TtrpcCode.Unavailable);
});
