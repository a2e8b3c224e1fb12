import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import zlib from 'node:zlib';
import { SpdyConnection, INITIAL_WINDOW, type ByteTransport } from './connection.js';
import { SPDY3_DICTIONARY } from './dictionary.js';
import { encodeFrame, FrameReader, FLAG_FIN, type Frame } from './frames.js';
import { decodeHeaderBlock, encodeHeaderBlock, HeaderCompressor, HeaderDecompressor } from './header-compression.js';

test('the SPDY/3 dictionary is the one the draft lists', () => {
  assert.equal(SPDY3_DICTIONARY.length, 1423);
  assert.equal(createHash('sha256').update(SPDY3_DICTIONARY).digest('hex'), '51d27341373f923f3cd88e1eb7162aeaa3723d7585ff2399201dc06498407f02');
});

test('every frame type survives encode and decode, split at every byte', () => {
  const frames: Frame[] = [
    { type: 'syn_stream', streamId: 1, associatedStreamId: 0, priority: 3, flags: 0, headers: new Map([['streamtype', 'error'], ['port', '8080']]) },
    { type: 'syn_reply', streamId: 1, flags: 0, headers: new Map() },
    { type: 'data', streamId: 1, flags: FLAG_FIN, data: Buffer.from('hello') },
    { type: 'rst_stream', streamId: 3, status: 5 },
    { type: 'settings', flags: 0, entries: [{ flags: 0, id: 7, value: 1 << 20 }] },
    { type: 'ping', id: 7 },
    { type: 'goaway', lastGoodStreamId: 9, status: 0 },
    { type: 'headers', streamId: 5, flags: 0, headers: new Map([['a', 'b\0c']]) },
    { type: 'window_update', streamId: 0, delta: 32768 },
  ];
  const compressor = new HeaderCompressor();
  const wire = Buffer.concat(frames.map((f) => encodeFrame(f, compressor)));
  const reader = new FrameReader(new HeaderDecompressor());
  const decoded: Frame[] = [];
  for (const byte of wire) decoded.push(...reader.push(Buffer.of(byte)));
  assert.deepEqual(decoded, frames);
});

test('a SYN_STREAM built by hand from the draft decodes', () => {
  // Header block: 1 pair, "streamtype" = "stdout", deflated with the dictionary and a sync flush.
  const block = Buffer.concat([Buffer.from([0, 0, 0, 1, 0, 0, 0, 10]), Buffer.from('streamtype'), Buffer.from([0, 0, 0, 6]), Buffer.from('stdout')]);
  const deflated = zlib.deflateSync(block, { dictionary: SPDY3_DICTIONARY, finishFlush: zlib.constants.Z_SYNC_FLUSH });
  const body = Buffer.concat([Buffer.from([0, 0, 0, 5, 0, 0, 0, 0, 0x40, 0]), deflated]);
  // Control bit + version 3, type 1, flags FIN, 24-bit length.
  const head = Buffer.from([0x80, 0x03, 0x00, 0x01, 0x01, 0, 0, body.length]);
  const [frame] = new FrameReader(new HeaderDecompressor()).push(Buffer.concat([head, body]));
  assert.deepEqual(frame, { type: 'syn_stream', streamId: 5, associatedStreamId: 0, priority: 2, flags: FLAG_FIN, headers: new Map([['streamtype', 'stdout']]) });
  // A data frame: stream 5, no flags, 3 bytes.
  const [data] = new FrameReader(new HeaderDecompressor()).push(Buffer.from([0, 0, 0, 5, 0, 0, 0, 3, 0x61, 0x62, 0x63]));
  assert.deepEqual(data, { type: 'data', streamId: 5, flags: 0, data: Buffer.from('abc') });
});

test('header blocks share one compression context per direction', () => {
  const compressor = new HeaderCompressor();
  const decompressor = new HeaderDecompressor();
  const h = new Map([['streamtype', 'data'], ['port', '80'], ['requestid', '0']]);
  const first = compressor.compress(h);
  const second = compressor.compress(h);
  assert.ok(second.length < first.length, 'the second block refers back to the first');
  assert.deepEqual(decompressor.decompress(first), h);
  assert.deepEqual(decompressor.decompress(second), h);
  assert.deepEqual(decodeHeaderBlock(encodeHeaderBlock(h)), h);
  assert.throws(() => new HeaderDecompressor().decompress(second));
});

/** Two connections wired back to back in memory. */
function pair(): { client: SpdyConnection; server: SpdyConnection; serverStreams: import('./connection.js').SpdyStream[]; wire: { toClient: Frame[] } } {
  const serverStreams: import('./connection.js').SpdyStream[] = [];
  const wire = { toClient: [] as Frame[] };
  let client!: SpdyConnection;
  let server!: SpdyConnection;
  const spy = new FrameReader(new HeaderDecompressor());
  const toServer: ByteTransport = { write: (b) => (setImmediate(() => server.receive(b)), true), end: () => setImmediate(() => server.transportClosed()), destroy: () => undefined };
  const toClient: ByteTransport = {
    write: (b) => {
      wire.toClient.push(...spy.push(b));
      setImmediate(() => client.receive(b));
      return true;
    },
    end: () => setImmediate(() => client.transportClosed()),
    destroy: () => undefined,
  };
  client = new SpdyConnection(toServer, { onStream: () => undefined, onClose: () => undefined }, 'client');
  server = new SpdyConnection(toClient, { onStream: (s) => serverStreams.push(s), onClose: () => undefined });
  return { client, server, serverStreams, wire };
}

test('streams carry data both ways, half-close with FIN, and windows are kept', async () => {
  const { client, serverStreams } = pair();
  const stream = client.createStream(new Map([['streamtype', 'stdout']]));
  const received: Buffer[] = [];
  stream.onData((c) => received.push(c));
  const ended = new Promise<void>((r) => stream.onEnd(r));
  client.createStream(new Map([['streamtype', 'stdin']]), true);
  while (serverStreams.length < 2) await new Promise((r) => setTimeout(r, 5));
  assert.equal(serverStreams.length, 2);
  assert.equal(serverStreams[0]!.header('streamType'), 'stdout');
  const big = Buffer.alloc(5 * INITIAL_WINDOW, 7);
  serverStreams[0]!.write(big);
  serverStreams[0]!.end();
  await ended;
  assert.ok(Buffer.concat(received).equals(big));
});

/** A server connection fed hand-made frames; returns the data bytes it sent on stream 1. */
function serverUnderTest(): { feed(f: Frame): void; sent(): number; stream(): import('./connection.js').SpdyStream } {
  const compressor = new HeaderCompressor();
  const reader = new FrameReader(new HeaderDecompressor());
  let sent = 0;
  let stream: import('./connection.js').SpdyStream | undefined;
  const server = new SpdyConnection(
    {
      write: (b) => {
        for (const f of reader.push(b)) if (f.type === 'data' && f.streamId === 1) sent += f.data.length;
        return true;
      },
      end: () => undefined,
      destroy: () => undefined,
    },
    { onStream: (s) => (stream = s), onClose: () => undefined },
  );
  return { feed: (f) => server.receive(encodeFrame(f, compressor)), sent: () => sent, stream: () => stream! };
}

test('a peer that keeps windows is never sent more than they allow', () => {
  const t = serverUnderTest();
  t.feed({ type: 'settings', flags: 0, entries: [] });
  t.feed({ type: 'syn_stream', streamId: 1, associatedStreamId: 0, priority: 0, flags: 0, headers: new Map([['streamtype', 'stdout']]) });
  t.stream().write(Buffer.alloc(200_000));
  assert.equal(t.sent(), INITIAL_WINDOW);
  t.feed({ type: 'window_update', streamId: 1, delta: 1000 });
  assert.equal(t.sent(), INITIAL_WINDOW, 'the session window is still closed');
  t.feed({ type: 'window_update', streamId: 0, delta: 5000 });
  assert.equal(t.sent(), INITIAL_WINDOW + 1000);
  t.feed({ type: 'settings', flags: 0, entries: [{ flags: 0, id: 7, value: INITIAL_WINDOW + 3000 }] });
  assert.equal(t.sent(), INITIAL_WINDOW + 4000);
});

test('a peer that never speaks of windows (Go spdystream) is not stalled at 64 KiB', () => {
  const t = serverUnderTest();
  t.feed({ type: 'syn_stream', streamId: 1, associatedStreamId: 0, priority: 0, flags: 0, headers: new Map([['streamtype', 'stdout']]) });
  t.stream().write(Buffer.alloc(200_000));
  assert.equal(t.sent(), 200_000);
});

test('pings from the client are answered; GOAWAY ends the connection', async () => {
  const { client, wire } = pair();
  const closed = new Promise<string>((r) => {
    (client as unknown as { events: { onClose: (x: string) => void } }).events.onClose = r;
  });
  (client as unknown as { send(f: Frame): void }).send({ type: 'ping', id: 1 });
  while (!wire.toClient.some((f) => f.type === 'ping')) await new Promise((r) => setTimeout(r, 5));
  assert.ok(wire.toClient.some((f) => f.type === 'ping' && f.id === 1));
  (client as unknown as { send(f: Frame): void }).send({ type: 'goaway', lastGoodStreamId: 0, status: 0 });
  await closed;
  assert.ok(wire.toClient.some((f) => f.type === 'goaway'));
});
