import WebSocket from 'ws';

export interface ExecResult {
  stdout: string;
  stderr: string;
  /** Raw error-channel payload. */
  error: string;
}

/** Opens a stream URL as a WebSocket; rejects with the HTTP status when the upgrade is refused. */
export function openStream(url: string, protocol: string, onMessage?: (data: Buffer, isBinary: boolean) => void): Promise<WebSocket> {
  return new Promise((resolve, reject) => {
    const ws = new WebSocket(url.replace(/^http/, 'ws'), [protocol]);
    // Frames sent right after the upgrade can arrive with it, before `open` callers run.
    if (onMessage) ws.on('message', onMessage);
    ws.once('open', () => resolve(ws));
    ws.once('unexpected-response', (_req, res) => reject(Object.assign(new Error(`HTTP ${res.statusCode}`), { statusCode: res.statusCode })));
    ws.once('error', reject);
  });
}

/** Runs one remote command session: sends `stdin` (then closes it on v5), collects output until the server closes. */
export async function runSession(url: string, protocol: string, stdin?: string, onOpen?: (ws: WebSocket) => void): Promise<ExecResult> {
  const base64 = protocol.includes('base64');
  const result: ExecResult = { stdout: '', stderr: '', error: '' };
  const ws = await openStream(url, protocol, (data: Buffer, isBinary) => {
    const channel = base64 && !isBinary ? data[0]! - 0x30 : data[0]!;
    const payload = base64 && !isBinary ? Buffer.from(data.subarray(1).toString(), 'base64') : data.subarray(1);
    const text = payload.toString('utf8');
    if (channel === 1) result.stdout += text;
    else if (channel === 2) result.stderr += text;
    else if (channel === 3) result.error += text;
  });
  const done = new Promise<ExecResult>((resolve) => ws.once('close', () => resolve(result)));
  onOpen?.(ws);
  if (stdin !== undefined) {
    if (base64) ws.send(`0${Buffer.from(stdin).toString('base64')}`);
    else ws.send(Buffer.concat([Buffer.of(0), Buffer.from(stdin)]));
    if (protocol === 'v5.channel.k8s.io') ws.send(Buffer.of(255, 0));
  }
  return done;
}
