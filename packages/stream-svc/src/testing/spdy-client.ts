import { connect, type Socket } from 'node:net';
import WebSocket from 'ws';
import { SpdyConnection, type SpdyStream } from '../spdy/connection.js';
import { bindWebSocket } from '../spdy/transports.js';

/** The test clients keep SPDY/3.1 flow control, with windows large enough not to throttle a fast link. */
const CLIENT_WINDOW = 4 * 1024 * 1024;
const SPDY_TUNNEL = 'SPDY/3.1+portforward.k8s.io';

export interface UpgradeRefusal extends Error {
  statusCode: number;
  headers: Record<string, string>;
  body: string;
}

export interface SpdyClient {
  connection: SpdyConnection;
  socket: Socket | undefined;
  /** The X-Stream-Protocol-Version the server chose ('' when none). */
  protocol: string;
  closed: Promise<string>;
}

/** Upgrades a stream URL to SPDY/3.1 offering `protocols` in order (POST, as kubectl exec does). */
export function openSpdy(url: string, protocols: string[], method = 'POST'): Promise<SpdyClient> {
  const u = new URL(url);
  return new Promise((resolve, reject) => {
    const socket = connect(Number(u.port), u.hostname);
    socket.setNoDelay(true);
    socket.once('error', reject);
    socket.once('connect', () => {
      const lines = [`${method} ${u.pathname}${u.search} HTTP/1.1`, `Host: ${u.host}`, 'Connection: Upgrade', 'Upgrade: SPDY/3.1', 'Content-Length: 0', ...protocols.map((p) => `X-Stream-Protocol-Version: ${p}`)];
      socket.write(`${lines.join('\r\n')}\r\n\r\n`);
    });
    let buffered = Buffer.alloc(0);
    const onData = (chunk: Buffer): void => {
      buffered = Buffer.concat([buffered, chunk]);
      const end = buffered.indexOf('\r\n\r\n');
      if (end < 0) return;
      socket.off('data', onData);
      const head = buffered.subarray(0, end).toString('latin1').split('\r\n');
      const statusCode = Number(head[0]!.split(' ')[1]);
      const headers: Record<string, string> = {};
      for (const line of head.slice(1)) {
        const i = line.indexOf(':');
        headers[line.slice(0, i).trim().toLowerCase()] = line.slice(i + 1).trim();
      }
      const rest = buffered.subarray(end + 4);
      if (statusCode !== 101) {
        let body = rest.toString('utf8');
        socket.on('data', (c: Buffer) => (body += c.toString('utf8')));
        socket.once('close', () => reject(Object.assign(new Error(`HTTP ${statusCode}: ${body}`), { statusCode, headers, body })));
        return;
      }
      let closedResolve: (reason: string) => void = () => undefined;
      const closed = new Promise<string>((r) => (closedResolve = r));
      const connection = new SpdyConnection(
        { write: (b) => socket.write(b), end: () => socket.end(), destroy: () => socket.destroy() },
        { onStream: (s) => s.reset(), onClose: (reason) => closedResolve(reason) },
        'client',
        CLIENT_WINDOW,
      );
      socket.on('data', (c: Buffer) => connection.receive(c));
      socket.on('drain', () => connection.transportDrained());
      socket.on('close', () => connection.transportClosed());
      socket.on('end', () => socket.end());
      if (rest.length > 0) connection.receive(rest);
      resolve({ connection, socket, protocol: headers['x-stream-protocol-version'] ?? '', closed });
    };
    socket.on('data', onData);
  });
}

/** A WebSocket with subprotocol SPDY/3.1+portforward.k8s.io, carrying a SPDY client connection. */
export function openSpdyOverWebSocket(url: string): Promise<SpdyClient> {
  return new Promise((resolve, reject) => {
    // ws will not offer a subprotocol holding '/', which client-go does; the header is set by
    // hand and the server's answer taken before ws checks it against an empty offer.
    let answered = '';
    const ws = new WebSocket(url.replace(/^http/, 'ws'), {
      headers: { 'Sec-WebSocket-Protocol': SPDY_TUNNEL },
      finishRequest: (req) => {
        req.prependListener('upgrade', (res) => {
          answered = String(res.headers['sec-websocket-protocol'] ?? '');
          delete res.headers['sec-websocket-protocol'];
        });
        req.end();
      },
    });
    let closedResolve: (reason: string) => void = () => undefined;
    const closed = new Promise<string>((r) => (closedResolve = r));
    // Bound before `open` so that no early message is lost.
    const connection = bindWebSocket(ws, (transport) => new SpdyConnection(transport, { onStream: (s) => s.reset(), onClose: (r) => closedResolve(r) }, 'client', CLIENT_WINDOW), 3_600_000);
    ws.once('open', () => resolve({ connection, socket: undefined, protocol: answered, closed }));
    ws.once('unexpected-response', (_req, res) => reject(Object.assign(new Error(`HTTP ${res.statusCode}`), { statusCode: res.statusCode })));
    ws.once('error', reject);
  });
}

export function collect(stream: SpdyStream): Promise<Buffer> {
  const chunks: Buffer[] = [];
  stream.onData((c) => chunks.push(c));
  return new Promise((resolve) => {
    stream.onEnd(() => resolve(Buffer.concat(chunks)));
    stream.onReset(() => resolve(Buffer.concat(chunks)));
  });
}

export interface SpdyExecResult {
  stdout: Buffer;
  stderr: Buffer;
  error: string;
  protocol: string;
}

/** Runs an exec session as client-go does: error, stdin, stdout, stderr streams; stdin then FIN. */
export async function spdyExec(url: string, protocols: string[], options: { stdin?: Buffer; stdout?: boolean; stderr?: boolean } = { stdout: true, stderr: true }): Promise<SpdyExecResult> {
  const client = await openSpdy(url, protocols);
  const { connection } = client;
  const error = collect(connection.createStream(new Map([['streamtype', 'error']])));
  const stdin = options.stdin !== undefined ? connection.createStream(new Map([['streamtype', 'stdin']])) : undefined;
  const stdout = options.stdout ? collect(connection.createStream(new Map([['streamtype', 'stdout']]))) : Promise.resolve(Buffer.alloc(0));
  const stderr = options.stderr ? collect(connection.createStream(new Map([['streamtype', 'stderr']]))) : Promise.resolve(Buffer.alloc(0));
  if (stdin && options.stdin) {
    stdin.onData(() => undefined);
    for (let at = 0; at < options.stdin.length; at += 256 * 1024) {
      if (!stdin.write(options.stdin.subarray(at, at + 256 * 1024))) await new Promise<void>((r) => stdin.onDrain(r));
    }
    stdin.end();
  }
  const [out, err, status] = await Promise.all([stdout, stderr, error]);
  await client.closed;
  return { stdout: out, stderr: err, error: status.toString('utf8'), protocol: client.protocol };
}

/** One forwarded connection over a port-forward SPDY session: sends `payload`, half-closes, reads to the end. */
export async function spdyForward(connection: SpdyConnection, port: number, requestId: string | undefined, payload: Buffer): Promise<{ data: Buffer; error: string }> {
  const headers = (type: string): Map<string, string> => {
    const h = new Map([['streamtype', type], ['port', String(port)]]);
    if (requestId !== undefined) h.set('requestid', requestId);
    return h;
  };
  const errorStream = connection.createStream(headers('error'));
  errorStream.end();
  const error = collect(errorStream);
  const dataStream = connection.createStream(headers('data'));
  const data = collect(dataStream);
  for (let at = 0; at < payload.length; at += 256 * 1024) {
    if (!dataStream.write(payload.subarray(at, at + 256 * 1024))) await new Promise<void>((r) => dataStream.onDrain(r));
  }
  dataStream.end();
  const [d, e] = await Promise.all([data, error]);
  return { data: d, error: e.toString('utf8') };
}
