/**
 * A client for exec and attach stream URLs over WebSocket (v5.channel.k8s.io / v4.channel.k8s.io),
 * as kubectl speaks them: each message starts with its channel (0 stdin, 1 stdout, 2 stderr,
 * 3 status, 4 resize); v5's [255, 0] closes stdin.
 *
 *   openRemoteCommand(url, protocol?): Promise<RemoteCommand>
 *   class RemoteCommand {
 *     stdout, stderr, status        what arrived so far (status: the parsed metav1.Status, if any)
 *     send(text), resize(width, height), closeStdin()
 *     waitForStdout(pattern, timeoutMs?), waitForStderr(...)   resolves with the text matched so far
 *     closed: Promise<void>         the server closed the stream
 *     vanish()                      drops the TCP connection without a close handshake
 *   }
 */
import WebSocket from 'ws';
import { RemoteOutput, type RemoteStatus } from './remote-output.js';

export type { RemoteStatus };

export class RemoteCommand extends RemoteOutput {
  readonly closed: Promise<void>;

  constructor(private readonly ws: WebSocket) {
    super();
    ws.on('message', (data: Buffer) => {
      const payload = data.subarray(1).toString('utf8');
      if (data[0] === 1) this.stdout += payload;
      else if (data[0] === 2) this.stderr += payload;
      else if (data[0] === 3) this.status = JSON.parse(payload) as RemoteStatus;
      this.notify();
    });
    this.closed = new Promise((resolve) => ws.once('close', () => {
      this.notify();
      resolve();
    }));
  }

  send(text: string): void {
    this.ws.send(Buffer.concat([Buffer.of(0), Buffer.from(text)]));
  }

  resize(width: number, height: number): void {
    this.ws.send(Buffer.concat([Buffer.of(4), Buffer.from(JSON.stringify({ Width: width, Height: height }))]));
  }

  closeStdin(): void {
    this.ws.send(Buffer.of(255, 0));
  }

  /** Closes the connection as a client that crashed would: no close frame. */
  vanish(): void {
    this.ws.terminate();
  }

  close(): void {
    this.ws.close();
  }

  protected hasEnded(): boolean {
    return this.ws.readyState === WebSocket.CLOSED;
  }
}

export function openRemoteCommand(url: string, protocol = 'v5.channel.k8s.io'): Promise<RemoteCommand> {
  return new Promise((resolve, reject) => {
    const ws = new WebSocket(url.replace(/^http/, 'ws'), [protocol]);
    // Messages may arrive with the upgrade: the command is set up before `open` resolves.
    const command = new RemoteCommand(ws);
    ws.once('open', () => resolve(command));
    ws.once('unexpected-response', (_req, res) => reject(new Error(`HTTP ${res.statusCode} opening ${url}`)));
    ws.once('error', reject);
  });
}
