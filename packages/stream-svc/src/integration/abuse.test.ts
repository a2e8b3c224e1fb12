import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { connect, type Socket } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
import zlib from 'node:zlib';
import type WebSocket from 'ws';
import { callUnary } from '@skiff/proto';
import type { TestDaemon } from '@skiff/test-support';
import { busyboxEchoServer, isRoot } from '@skiff/test-support';
import { SPDY3_DICTIONARY } from '../spdy/dictionary.js';
import { encodeFrame, FrameReader, GoAwayStatus, RstStatus, type Frame } from '../spdy/frames.js';
import { encodeHeaderBlock, HeaderCompressor, HeaderDecompressor } from '../spdy/header-compression.js';
import { collect, openSpdy } from '../testing/spdy-client.js';
import type { StreamDaemon } from './stream-daemon.js';
import { startStreamPod, type StreamPod } from './stream-pod.js';
import { openStream, runSession } from '../testing/ws-client.js';

const ECHO_PORT = 8080;
const LIMITS = { max_connections: 4, max_streams_per_session: 8, max_port_forward_connections: 2 };

/** An upgraded connection made by hand, so that anything at all can be sent on it. */
interface RawConnection {
  socket: Socket;
  status: number;
  /** Every byte the server sent after its answer's head, once it closed the connection. */
  rest: Promise<Buffer>;
}

function rawUpgrade(url: string, headers: string[]): Promise<RawConnection> {
  const u = new URL(url);
  return new Promise((resolve, reject) => {
    const socket = connect(Number(u.port), u.hostname);
    socket.once('error', reject);
    socket.once('connect', () => socket.write(`GET ${u.pathname} HTTP/1.1\r\nHost: ${u.host}\r\n${headers.join('\r\n')}\r\n\r\n`));
    const chunks: Buffer[] = [];
    let answered = false;
    const rest = new Promise<Buffer>((r) => socket.once('close', () => r(Buffer.concat(chunks))));
    socket.on('data', (c: Buffer) => {
      chunks.push(c);
      if (answered) return;
      const all = Buffer.concat(chunks);
      const end = all.indexOf('\r\n\r\n');
      if (end < 0) return;
      answered = true;
      chunks.splice(0, chunks.length, all.subarray(end + 4));
      resolve({ socket, status: Number(all.subarray(0, end).toString('latin1').split(' ')[1]), rest });
    });
  });
}

const spdyUpgrade = (url: string): Promise<RawConnection> => rawUpgrade(url, ['Connection: Upgrade', 'Upgrade: SPDY/3.1', 'X-Stream-Protocol-Version: v4.channel.k8s.io']);
const wsUpgrade = (url: string): Promise<RawConnection> =>
  rawUpgrade(url.replace(/^http/, 'http'), ['Connection: Upgrade', 'Upgrade: websocket', 'Sec-WebSocket-Version: 13', `Sec-WebSocket-Key: ${randomBytes(16).toString('base64')}`, 'Sec-WebSocket-Protocol: v5.channel.k8s.io']);

/** The SPDY frames the server sent before closing. */
async function framesFrom(conn: RawConnection): Promise<Frame[]> {
  return new FrameReader(new HeaderDecompressor()).push(await conn.rest);
}

/** The close code of the first WebSocket close frame the server sent. */
async function closeCodeFrom(conn: RawConnection): Promise<number | undefined> {
  const bytes = await conn.rest;
  for (let at = 0; at + 2 <= bytes.length; ) {
    const opcode = bytes[at]! & 0x0f;
    let length = bytes[at + 1]! & 0x7f;
    let head = 2;
    if (length === 126) (length = bytes.readUInt16BE(at + 2)), (head = 4);
    else if (length === 127) (length = Number(bytes.readBigUInt64BE(at + 2))), (head = 10);
    if (opcode === 0x8) return bytes.readUInt16BE(at + head);
    at += head + length;
  }
  return undefined;
}

/** A masked WebSocket frame as a client sends it (mask all zero: the payload goes as is). */
function wsFrame(firstByte: number, payload: Buffer, declaredLength = payload.length, masked = true): Buffer {
  const len = declaredLength < 126 ? Buffer.of((masked ? 0x80 : 0) | declaredLength) : Buffer.concat([Buffer.of((masked ? 0x80 : 0) | 127), (() => {
    const b = Buffer.alloc(8);
    b.writeBigUInt64BE(BigInt(declaredLength));
    return b;
  })()]);
  return Buffer.concat([Buffer.of(firstByte), len, masked ? Buffer.alloc(4) : Buffer.alloc(0), payload]);
}

describe('stream-svc facing hostile clients', { skip: !isRoot && 'needs root', timeout: 300_000 }, () => {
  let pod: StreamPod | undefined;
  let d: TestDaemon;
  let stream: StreamDaemon;
  let podId: string;
  let containerId: string;

  before(async () => {
    const toml = Object.entries(LIMITS).map(([k, v]) => `${k} = ${v}`).join('\n');
    pod = await startStreamPod('target', busyboxEchoServer(ECHO_PORT), toml);
    ({ runtime: d, stream, podId, containerId } = pod);
  });

  after(async () => {
    await pod?.stop();
  });

  async function execUrl(cmd: string[] = ['echo', 'ok']): Promise<string> {
    return (await callUnary(d.client, 'Exec', { container_id: containerId, cmd, stdout: true })).url;
  }

  /** A well-behaved client: a short exec still works and stream-svc still runs. */
  async function stillServes(): Promise<void> {
    const r = await runSession(await execUrl(), 'v5.channel.k8s.io');
    assert.equal(r.stdout, 'ok\n');
    assert.equal(stream.child!.exitCode, null, 'stream-svc still runs');
  }

  it('SPDY: a frame of another version ends the session with GOAWAY PROTOCOL_ERROR', { timeout: 30_000 }, async () => {
    const conn = await spdyUpgrade(await execUrl());
    assert.equal(conn.status, 101);
    conn.socket.write(Buffer.from([0x80, 0x02, 0x00, 0x01, 0x00, 0x00, 0x00, 0x04, 1, 2, 3, 4]));
    const frames = await framesFrom(conn);
    assert.deepEqual(frames.at(-1), { type: 'goaway', lastGoodStreamId: 0, status: GoAwayStatus.PROTOCOL_ERROR });
    await stillServes();
  });

  it('SPDY: a header block that inflates past 64 KiB ends the session with GOAWAY PROTOCOL_ERROR', { timeout: 30_000 }, async () => {
    const conn = await spdyUpgrade(await execUrl());
    const bomb = zlib.deflateSync(encodeHeaderBlock(new Map([['streamtype', 'x'.repeat(8 * 1024 * 1024)]])), { dictionary: SPDY3_DICTIONARY, finishFlush: zlib.constants.Z_SYNC_FLUSH });
    const fixed = Buffer.from([0, 0, 0, 1, 0, 0, 0, 0, 0, 0]);
    const body = Buffer.concat([fixed, bomb]);
    const head = Buffer.from([0x80, 0x03, 0x00, 0x01, 0x00, 0, 0, 0]);
    head.writeUIntBE(body.length, 5, 3);
    conn.socket.write(Buffer.concat([head, body]));
    const frames = await framesFrom(conn);
    assert.deepEqual(frames.at(-1), { type: 'goaway', lastGoodStreamId: 0, status: GoAwayStatus.PROTOCOL_ERROR });
    await stillServes();
  });

  it('SPDY: a frame declared larger than 1 MiB ends the session with GOAWAY PROTOCOL_ERROR before it arrives', { timeout: 30_000 }, async () => {
    const conn = await spdyUpgrade(await execUrl());
    conn.socket.write(Buffer.from([0x00, 0x00, 0x00, 0x01, 0x00, 0xff, 0xff, 0xff, 1, 2, 3]));
    const frames = await framesFrom(conn);
    assert.deepEqual(frames.at(-1), { type: 'goaway', lastGoodStreamId: 0, status: GoAwayStatus.PROTOCOL_ERROR });
    await stillServes();
  });

  it('SPDY: a truncated frame and then the client hanging up: the session is over, nothing else is', { timeout: 30_000 }, async () => {
    const conn = await spdyUpgrade(await execUrl());
    const syn = encodeFrame({ type: 'syn_stream', streamId: 1, associatedStreamId: 0, priority: 0, flags: 0, headers: new Map([['streamtype', 'error']]) }, new HeaderCompressor());
    conn.socket.end(syn.subarray(0, syn.length - 3));
    assert.equal(conn.status, 101);
    assert.equal((await conn.rest).length, 0, 'the server closed the session without answering the half frame');
    assert.equal(conn.socket.destroyed, true, 'the session is over');
    await stillServes();
  });

  it(`SPDY: stream ${LIMITS.max_streams_per_session + 1} of a session is refused with RST_STREAM REFUSED_STREAM`, { timeout: 30_000 }, async () => {
    const client = await openSpdy(await execUrl(['sleep', '30']), ['v4.channel.k8s.io']);
    const resets: number[] = [];
    for (let i = 0; i <= LIMITS.max_streams_per_session; i++) {
      const s = client.connection.createStream(new Map([['streamtype', 'error']]));
      s.onReset((status) => resets.push(status));
    }
    const deadline = Date.now() + 10_000;
    while (!resets.includes(RstStatus.REFUSED_STREAM)) {
      assert.ok(Date.now() < deadline, `no REFUSED_STREAM (resets: ${resets.join(', ')})`);
      await sleep(50);
    }
    assert.deepEqual(resets, [RstStatus.REFUSED_STREAM], 'only the stream past the limit is refused');
    client.socket!.destroy();
    await stillServes();
  });

  it('WebSocket: a reserved opcode or an unmasked frame closes with 1002, a message over 4 MiB with 1009', { timeout: 30_000 }, async () => {
    const cases: Array<[string, Buffer, number]> = [
      ['reserved opcode', wsFrame(0x83, Buffer.from('x')), 1002],
      ['unmasked frame', wsFrame(0x82, Buffer.from([0, 1]), 2, false), 1002],
      ['a 64 MiB message', wsFrame(0x82, Buffer.alloc(16)), 1009],
    ];
    cases[2]![1] = wsFrame(0x82, Buffer.alloc(16), 64 * 1024 * 1024);
    for (const [what, bytes, code] of cases) {
      const conn = await wsUpgrade(await execUrl(['sleep', '30']));
      assert.equal(conn.status, 101, what);
      conn.socket.write(bytes);
      assert.equal(await closeCodeFrom(conn), code, what);
    }
    // A truncated frame and a hang-up.
    const conn = await wsUpgrade(await execUrl(['sleep', '30']));
    conn.socket.end(wsFrame(0x82, Buffer.from([0, 1, 2, 3]), 100));
    await conn.rest;
    await stillServes();
  });

  it(`a flood of connections: past ${LIMITS.max_connections} streaming connections each is answered 503 and its URL stays usable`, { timeout: 60_000 }, async () => {
    const held: WebSocket[] = [];
    for (let i = 0; i < LIMITS.max_connections; i++) held.push(await openStream(await execUrl(['sleep', '60']), 'v5.channel.k8s.io'));
    const refusedUrls = await Promise.all(Array.from({ length: 20 }, () => execUrl()));
    const answers = await Promise.all(refusedUrls.map((url) => wsUpgrade(url).then((c) => (c.socket.destroy(), c.status))));
    assert.deepEqual(new Set(answers), new Set([503]));
    const health = await fetch(`${stream.baseUrl}/healthz`);
    assert.equal(health.status, 200, 'the health check answers meanwhile');
    const closed = new Promise((r) => held[0]!.once('close', r));
    held[0]!.terminate();
    await closed;
    await sleep(200);
    const r = await runSession(refusedUrls[0]!, 'v5.channel.k8s.io');
    assert.equal(r.stdout, 'ok\n', 'a refused URL works once a connection is free');
    for (const ws of held.slice(1)) ws.terminate();
    await sleep(500);
    await stillServes();
  });

  it(`port-forward: connection ${LIMITS.max_port_forward_connections + 1} of a session gets an error on its error stream`, { timeout: 30_000 }, async () => {
    const { url } = await callUnary(d.client, 'PortForward', { pod_sandbox_id: podId, port: [ECHO_PORT] });
    const client = await openSpdy(url, ['portforward.k8s.io']);
    const open = (i: number): { error: Promise<Buffer>; data: ReturnType<typeof client.connection.createStream> } => {
      const headers = (type: string): Map<string, string> => new Map([['streamtype', type], ['port', String(ECHO_PORT)], ['requestid', String(i)]]);
      const errorStream = client.connection.createStream(headers('error'));
      errorStream.end();
      const error = collect(errorStream);
      const data = client.connection.createStream(headers('data'));
      return { error, data };
    };
    const pairs = [];
    for (let i = 0; i < LIMITS.max_port_forward_connections; i++) {
      const pair = open(i);
      const echoed = new Promise<Buffer>((r) => pair.data.onData(r));
      pair.data.write(Buffer.from('ping'));
      assert.equal((await echoed).toString(), 'ping', `connection ${i} is forwarded`);
      pairs.push(pair);
    }
    const extra = open(LIMITS.max_port_forward_connections);
    assert.match((await extra.error).toString(), /connections are open in this session already \(stream\.max_port_forward_connections\)/);
    client.socket!.destroy();

    const many = (await callUnary(d.client, 'PortForward', { pod_sandbox_id: podId, port: [8080, 8081, 8082] })).url;
    const ws = await openStream(many, 'v4.channel.k8s.io');
    const code = await new Promise<number>((r) => ws.once('close', (c) => r(c)));
    assert.equal(code, 1008);
    await stillServes();
  });
});
