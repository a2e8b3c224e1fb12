import type { WebSocket, RawData } from 'ws';
import { legacyErrorFor, statusFor } from './status-message.js';
import { BufferedInputSession, type StreamOutcome, type TerminalSize } from './session.js';

/** Exec/attach subprotocols, best first. */
export const REMOTE_COMMAND_PROTOCOLS = ['v5.channel.k8s.io', 'v4.channel.k8s.io', 'v4.base64.channel.k8s.io', 'channel.k8s.io', 'base64.channel.k8s.io'] as const;
export type RemoteCommandProtocol = (typeof REMOTE_COMMAND_PROTOCOLS)[number];

export const CHANNEL = { stdin: 0, stdout: 1, stderr: 2, error: 3, resize: 4 } as const;
/** v5: a message [255, channel] closes that channel (the client's stdin). */
const CLOSE_SIGNAL = 255;

/** Bytes handed to the WebSocket and not yet written to the socket above which the writer is asked to wait. */
export const SEND_HIGH_WATER = 1024 * 1024;
const SEND_LOW_WATER = SEND_HIGH_WATER / 4;

/** The first protocol the client offered that we speak (clients list theirs in preference order). */
export function chooseProtocol(offered: Set<string>, supported: readonly string[]): string | false {
  for (const p of offered) if (supported.includes(p)) return p;
  return false;
}

/** A channel.k8s.io-style WebSocket as a StreamSession. */
export class WebSocketSession extends BufferedInputSession {
  private finished = false;
  private idleTimer: NodeJS.Timeout | undefined;
  private readonly base64: boolean;
  private readonly statusJson: boolean;
  /** Bytes passed to `ws.send` whose write has not completed. */
  private unsent = 0;
  private blocked = false;

  constructor(
    private readonly ws: WebSocket,
    readonly protocol: string,
    private readonly cmd: string[],
    private readonly idleTimeoutMs: number,
  ) {
    super();
    this.base64 = protocol.includes('base64');
    this.statusJson = protocol.startsWith('v4') || protocol.startsWith('v5');
    ws.on('message', (data, isBinary) => this.receive(data, isBinary));
    ws.on('close', () => this.gone());
    ws.on('error', () => this.gone());
    this.touch();
  }

  writeStdout(chunk: Buffer): boolean {
    return this.send(CHANNEL.stdout, chunk);
  }
  writeStderr(chunk: Buffer): boolean {
    return this.send(CHANNEL.stderr, chunk);
  }

  finish(outcome: StreamOutcome): void {
    if (this.finished) return;
    if (this.statusJson) this.send(CHANNEL.error, Buffer.from(JSON.stringify(statusFor(outcome, this.cmd))));
    else {
      const text = legacyErrorFor(outcome, this.cmd);
      if (text !== undefined) this.send(CHANNEL.error, Buffer.from(text));
    }
    this.finished = true;
    clearTimeout(this.idleTimer);
    this.ws.close(1000);
  }

  private send(channel: number, data: Buffer): boolean {
    if (this.finished || this.ws.readyState !== this.ws.OPEN) return true;
    this.touch();
    const message = this.base64 ? Buffer.from(`${channel}${data.toString('base64')}`) : Buffer.concat([Buffer.of(channel), data]);
    this.unsent += message.length;
    // The callback comes once the bytes are written to the socket (or the socket failed).
    this.ws.send(message, { binary: !this.base64 }, () => this.sent(message.length));
    if (this.unsent > SEND_HIGH_WATER) this.blocked = true;
    return !this.blocked;
  }

  private sent(bytes: number): void {
    this.unsent -= bytes;
    if (this.blocked && this.unsent <= SEND_LOW_WATER) {
      this.blocked = false;
      this.drained();
    }
  }

  private receive(raw: RawData, isBinary: boolean): void {
    this.touch();
    const bytes = Buffer.isBuffer(raw) ? raw : Array.isArray(raw) ? Buffer.concat(raw) : Buffer.from(raw);
    if (bytes.length === 0) return;
    let channel: number;
    let payload: Buffer;
    if (this.base64 && !isBinary) {
      channel = bytes[0]! - 0x30;
      payload = Buffer.from(bytes.subarray(1).toString('ascii'), 'base64');
    } else {
      channel = bytes[0]!;
      payload = bytes.subarray(1);
    }
    if (channel === CLOSE_SIGNAL && this.protocol === 'v5.channel.k8s.io') {
      if (payload[0] === CHANNEL.stdin) this.receivedStdin(null);
      return;
    }
    if (channel === CHANNEL.stdin) {
      if (payload.length > 0) this.receivedStdin(payload);
    } else if (channel === CHANNEL.resize) {
      const size = parseResize(payload);
      if (size) this.receivedResize(size);
    }
  }

  private touch(): void {
    clearTimeout(this.idleTimer);
    if (this.finished) return;
    this.idleTimer = setTimeout(() => {
      this.ws.close(1000, 'idle timeout');
      this.gone();
    }, this.idleTimeoutMs);
    this.idleTimer.unref();
  }

  private gone(): void {
    clearTimeout(this.idleTimer);
    if (this.finished) return;
    this.finished = true;
    this.receivedStdin(null);
    this.clientWentAway();
  }
}

export function parseResize(payload: Buffer): TerminalSize | undefined {
  try {
    const v = JSON.parse(payload.toString('utf8')) as { Width?: unknown; Height?: unknown };
    if (typeof v.Width === 'number' && typeof v.Height === 'number' && v.Width >= 0 && v.Height >= 0) {
      return { width: Math.min(v.Width, 65535), height: Math.min(v.Height, 65535) };
    }
  } catch {
    // a malformed resize is ignored, as the kubelet does
  }
  return undefined;
}
