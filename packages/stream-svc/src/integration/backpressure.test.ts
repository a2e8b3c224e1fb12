import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';
import { callUnary } from '@skiff/proto';
import type { TestDaemon } from '@skiff/test-support';
import { isRoot } from '@skiff/test-support';
import { openSpdy } from '../testing/spdy-client.js';
import type { StreamDaemon } from './stream-daemon.js';
import { startStreamPod, type StreamPod } from './stream-pod.js';
import { openStream } from '../testing/ws-client.js';

/** `seq 1 LINES` prints about 60 MiB: far more than any buffer stream-svc should hold for a client. */
const LINES = 8_000_000;
const SEQ_BYTES = (() => {
  let bytes = 0;
  for (let digits = 1, from = 1; from <= LINES; digits++, from *= 10) bytes += (Math.min(LINES, from * 10 - 1) - from + 1) * (digits + 1);
  return bytes;
})();
/** What stream-svc may grow by while its client reads nothing (the output is over 60 MiB). */
const GROWTH_BOUND = 40 * 1024 * 1024;

function rssOf(pid: number): number {
  const m = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  return Number(m![1]) * 1024;
}

/** Checks `seq 1 N` output as it arrives, without keeping it. */
class SeqChecker {
  private next = 1;
  private partial = '';
  bytes = 0;
  error: string | undefined;

  push(chunk: Buffer): void {
    this.bytes += chunk.length;
    const lines = (this.partial + chunk.toString('latin1')).split('\n');
    this.partial = lines.pop()!;
    for (const line of lines) {
      if (this.error) return;
      if (line !== String(this.next)) this.error = `line ${this.next} is ${JSON.stringify(line.slice(0, 20))}`;
      this.next++;
    }
  }

  get complete(): boolean {
    return !this.error && this.partial === '' && this.next === LINES + 1;
  }
}

/** Samples stream-svc's RSS while the client reads nothing; answers the growth over the start. */
async function growthWhileStalled(pid: number, ms: number): Promise<number> {
  const start = rssOf(pid);
  let peak = start;
  for (const end = Date.now() + ms; Date.now() < end; ) {
    await sleep(200);
    peak = Math.max(peak, rssOf(pid));
  }
  return peak - start;
}

describe('a client that stops reading exec output', { skip: !isRoot && 'needs root', timeout: 240_000 }, () => {
  let pod: StreamPod | undefined;
  let d: TestDaemon;
  let stream: StreamDaemon;
  let containerId: string;

  before(async () => {
    pod = await startStreamPod('loud', ['sleep', '3600']);
    ({ runtime: d, stream, containerId } = pod);
  });

  after(async () => {
    await pod?.stop();
  });

  async function execUrl(): Promise<string> {
    return (await callUnary(d.client, 'Exec', { container_id: containerId, cmd: ['seq', '1', String(LINES)], stdout: true })).url;
  }

  it('WebSocket: stream-svc pauses the command instead of buffering; every byte arrives once the client reads', { timeout: 120_000 }, async () => {
    const checker = new SeqChecker();
    let status = '';
    const ws = await openStream(await execUrl(), 'v5.channel.k8s.io', (data) => {
      if (data[0] === 1) checker.push(data.subarray(1));
      else if (data[0] === 3) status += data.subarray(1).toString();
    });
    const closed = new Promise<void>((r) => ws.once('close', () => r()));
    ws.pause();
    const growth = await growthWhileStalled(stream.child!.pid!, 4000);
    assert.ok(growth < GROWTH_BOUND, `stream-svc grew by ${Math.round(growth / 2 ** 20)} MiB while its client read nothing`);
    ws.resume();
    await closed;
    assert.equal(checker.error, undefined);
    assert.equal(checker.bytes, SEQ_BYTES);
    assert.ok(checker.complete);
    assert.equal(JSON.parse(status).status, 'Success');
  });

  it('SPDY: the same through a stalled TCP connection', { timeout: 120_000 }, async () => {
    const checker = new SeqChecker();
    const client = await openSpdy(await execUrl(), ['v4.channel.k8s.io']);
    const { connection, socket } = client;
    const errors: Buffer[] = [];
    connection.createStream(new Map([['streamtype', 'error']])).onData((c) => errors.push(c));
    const stdout = connection.createStream(new Map([['streamtype', 'stdout']]));
    stdout.onData((c) => checker.push(c));
    socket!.pause();
    const growth = await growthWhileStalled(stream.child!.pid!, 4000);
    assert.ok(growth < GROWTH_BOUND, `stream-svc grew by ${Math.round(growth / 2 ** 20)} MiB while its client read nothing`);
    socket!.resume();
    await client.closed;
    assert.equal(checker.error, undefined);
    assert.equal(checker.bytes, SEQ_BYTES);
    assert.equal(JSON.parse(Buffer.concat(errors).toString()).status, 'Success');
  });
});

/** Attach output also goes to the journal, line by line: long lines let 64 MiB pass it quickly. */
const LONG_LINE = 8191;
const LONG_LINES = 8192;

describe('a client that stops reading attach output', { skip: !isRoot && 'needs root', timeout: 240_000 }, () => {
  let pod: StreamPod | undefined;

  before(async () => {
    // The container waits for a line on stdin, so that all of its output comes after the attach.
    const script = `read go; yes "$(head -c ${LONG_LINE} /dev/zero | tr '\\0' x)" | head -n ${LONG_LINES}; sleep 3600`;
    pod = await startStreamPod('chatty', ['sh', '-c', script], '', { stdin: true });
  });

  after(async () => {
    await pod?.stop();
  });

  it('WebSocket: stream-svc stops reading from the container instead of buffering; every line arrives once the client reads', { timeout: 120_000 }, async () => {
    const { runtime, stream, containerId } = pod!;
    const line = Buffer.from(`${'x'.repeat(LONG_LINE)}\n`);
    const total = line.length * LONG_LINES;
    let received = 0;
    let corrupt: string | undefined;
    const url = (await callUnary(runtime.client, 'Attach', { container_id: containerId, stdin: true, stdout: true })).url;
    const ws = await openStream(url, 'v5.channel.k8s.io', (data) => {
      if (data[0] !== 1) return;
      const chunk = data.subarray(1);
      for (let i = 0; i < chunk.length && !corrupt; i++) {
        if (chunk[i] !== line[(received + i) % line.length]) corrupt = `byte ${received + i} is ${chunk[i]}`;
      }
      received += chunk.length;
    });
    ws.send(Buffer.from('\x00go\n'));
    ws.pause();
    const growth = await growthWhileStalled(stream.child!.pid!, 4000);
    assert.ok(growth < GROWTH_BOUND, `stream-svc grew by ${Math.round(growth / 2 ** 20)} MiB while its client read nothing`);
    ws.resume();
    const deadline = Date.now() + 90_000;
    while (received < total && !corrupt && Date.now() < deadline) await sleep(100);
    ws.close();
    assert.equal(corrupt, undefined);
    assert.equal(received, total);
  });
});
