/**
 * Clients of Skiff's streaming URLs for the end-to-end tests: WebSocket exec (channel.k8s.io
 * family) and port-forward (v4.channel.k8s.io), binary-safe; polling for a process in a container.
 * SPDY clients live in @skiff/stream-svc's testing directory.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import WebSocket from 'ws';

export interface WsExecResult {
  stdout: Buffer;
  stderr: Buffer;
  error: string;
  protocol: string;
}

export function openWebSocket(url: string, protocols: string[], onMessage: (data: Buffer) => void): Promise<WebSocket> {
  return new Promise((resolve, reject) => {
    const ws = new WebSocket(url.replace(/^http/, 'ws'), protocols);
    ws.on('message', (data: Buffer) => onMessage(data));
    ws.once('open', () => resolve(ws));
    ws.once('unexpected-response', (_req, res) => reject(Object.assign(new Error(`HTTP ${res.statusCode}`), { statusCode: res.statusCode })));
    ws.once('error', reject);
  });
}

/** Exec over WebSocket: stdin in 1 MiB messages, then (v5) the stdin close signal; output until the server closes. */
export async function wsExec(url: string, protocol: string, stdin?: Buffer): Promise<WsExecResult> {
  const out: Buffer[] = [];
  const err: Buffer[] = [];
  const status: Buffer[] = [];
  const ws = await openWebSocket(url, [protocol], (data) => {
    if (data[0] === 1) out.push(data.subarray(1));
    else if (data[0] === 2) err.push(data.subarray(1));
    else if (data[0] === 3) status.push(data.subarray(1));
  });
  const closed = new Promise<void>((resolve) => ws.once('close', () => resolve()));
  if (stdin !== undefined) {
    for (let at = 0; at < stdin.length; at += 1 << 20) ws.send(Buffer.concat([Buffer.of(0), stdin.subarray(at, at + (1 << 20))]));
    if (protocol === 'v5.channel.k8s.io') ws.send(Buffer.of(255, 0));
  }
  await closed;
  return { stdout: Buffer.concat(out), stderr: Buffer.concat(err), error: Buffer.concat(status).toString('utf8'), protocol: ws.protocol };
}

/** One v4.channel.k8s.io port-forward WebSocket for one port: sends `payload`, waits for `expect` bytes back. */
export async function wsForwardOnce(url: string, payload: Buffer, expectBytes: number, timeoutMs = 30_000): Promise<{ data: Buffer; error: string }> {
  const data: Buffer[] = [];
  const error: Buffer[] = [];
  let dataFrames = 0;
  let errorFrames = 0;
  let received = 0;
  let done: () => void = () => undefined;
  const finished = new Promise<void>((r) => (done = r));
  const ws = await openWebSocket(url, ['v4.channel.k8s.io'], (msg) => {
    // The first frame on each channel is the port number.
    if (msg[0] === 0 && dataFrames++ > 0) {
      data.push(msg.subarray(1));
      received += msg.length - 1;
      if (received >= expectBytes) done();
    } else if (msg[0] === 1 && errorFrames++ > 0) {
      error.push(msg.subarray(1));
      done();
    }
  });
  ws.once('close', () => done());
  for (let at = 0; at < payload.length; at += 256 * 1024) ws.send(Buffer.concat([Buffer.of(0), payload.subarray(at, at + 256 * 1024)]));
  const timer = setTimeout(() => done(), timeoutMs);
  await finished;
  clearTimeout(timer);
  ws.close();
  return { data: Buffer.concat(data), error: Buffer.concat(error).toString('utf8') };
}

/** Waits until `check` holds, or fails naming `what`. */
export async function eventually(what: string, check: () => Promise<boolean>, timeoutMs = 10_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(200);
  }
}
