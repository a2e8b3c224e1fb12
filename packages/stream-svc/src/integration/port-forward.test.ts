import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';
import type WebSocket from 'ws';
import { callUnary } from '@skiff/proto';
import { busyboxEchoServer, isRoot, type TestDaemon } from '@skiff/test-support';
import type { StreamDaemon } from './stream-daemon.js';
import { startStreamPod, type StreamPod } from './stream-pod.js';
import { openStream } from '../testing/ws-client.js';

const ECHO_PORT = 8080;
const CLOSED_PORT = 8081;

type Frames = Map<number, Buffer[]>;

/** Frames per channel, the two-byte port prefix kept. */
function collector(frames: Frames): (data: Buffer) => void {
  return (data) => {
    const list = frames.get(data[0]!) ?? [];
    list.push(data.subarray(1));
    frames.set(data[0]!, list);
  };
}

async function until(what: string | (() => string), check: () => boolean): Promise<void> {
  const deadline = Date.now() + 10_000;
  while (!check()) {
    assert.ok(Date.now() < deadline, `timed out waiting for ${typeof what === 'string' ? what : what()}`);
    await sleep(50);
  }
}

describe('port-forward over WebSocket', { skip: !isRoot && 'needs root', timeout: 120_000 }, () => {
  let pod: StreamPod | undefined;
  let d: TestDaemon;
  let stream: StreamDaemon;
  let podId: string;

  before(async () => {
    // An echo server in the pod, one `cat` per connection.
    pod = await startStreamPod('echo', busyboxEchoServer(ECHO_PORT));
    ({ runtime: d, stream, podId } = pod);
    await sleep(300);
  });

  after(async () => {
    await pod?.stop();
  });

  async function forward(ports: number[], frames: Frames): Promise<WebSocket> {
    const { url } = await callUnary(d.client, 'PortForward', { pod_sandbox_id: podId, port: ports });
    assert.ok(url.startsWith(`${stream.baseUrl}/portforward/`), url);
    return openStream(url, 'v4.channel.k8s.io', collector(frames));
  }

  it('carries bytes both ways and reports a refused port without ending the session', { timeout: 30_000 }, async () => {
    const frames: Frames = new Map();
    const ws = await forward([ECHO_PORT, CLOSED_PORT], frames);
    await until('port prefixes', () => [0, 1, 2, 3].every((c) => (frames.get(c)?.length ?? 0) >= 1));
    assert.equal(frames.get(0)![0]!.readUInt16LE(), ECHO_PORT);
    assert.equal(frames.get(2)![0]!.readUInt16LE(), CLOSED_PORT);
    await until('the refusal of the closed port', () => (frames.get(3)?.length ?? 0) >= 2);
    assert.match(Buffer.concat(frames.get(3)!.slice(1)).toString(), /8081.*refused/i);

    ws.send(Buffer.concat([Buffer.of(0), Buffer.from('ping\n')]));
    await until('the echo', () => Buffer.concat(frames.get(0)!.slice(1)).toString() === 'ping\n');
    assert.equal(ws.readyState, ws.OPEN);
    ws.close();
  });

  it('serves parallel sessions on the same port', { timeout: 30_000 }, async () => {
    const received: Frames[] = [new Map(), new Map(), new Map()];
    const sessions = await Promise.all(received.map((frames) => forward([ECHO_PORT], frames)));
    sessions.forEach((ws, i) => ws.send(Buffer.concat([Buffer.of(0), Buffer.from(`session ${i}\n`)])));
    for (const [i, frames] of received.entries()) {
      await until(() => `echo of session ${i} (got ${JSON.stringify([...frames].map(([c, f]) => [c, Buffer.concat(f).toString("hex")]))})`, () => Buffer.concat((frames.get(0) ?? []).slice(1)).toString() === `session ${i}\n`);
    }
    assert.deepEqual(
      received.map((frames) => Buffer.concat((frames.get(0) ?? []).slice(1)).toString()),
      received.map((_, i) => `session ${i}\n`),
      'each session got its own echo back, and no other',
    );
    assert.deepEqual(received.map((frames) => frames.get(0)![0]!.readUInt16LE()), received.map(() => ECHO_PORT), 'each data channel names the port');
    assert.deepEqual(sessions.map((ws) => ws.readyState), sessions.map((ws) => ws.OPEN), 'every session stays open');
    for (const ws of sessions) ws.close();
  });
});
