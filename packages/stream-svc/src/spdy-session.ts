import { legacyErrorFor, statusFor } from './status-message.js';
import { BufferedInputSession, type StreamOutcome } from './session.js';
import type { SpdyConnection, SpdyStream } from './spdy/connection.js';
import { parseResize } from './websocket-session.js';

/** The kubelet's wait for a client to open the streams a request needs. */
export const STREAM_CREATION_TIMEOUT_MS = 30_000;

export type StreamType = 'error' | 'stdin' | 'stdout' | 'stderr' | 'resize';

export interface WantedStreams {
  stdin: boolean;
  stdout: boolean;
  stderr: boolean;
  tty: boolean;
}

/**
 * Exec or attach over SPDY: the client opens one stream per kind, told apart by the `streamType`
 * header. v4 ends with a metav1.Status on the error stream; v1-v3 write a text error on failure
 * only. The v2+ protocols carry resize messages on their own stream (v3 and later).
 */
export class SpdyStreamSession extends BufferedInputSession {
  private readonly streams = new Map<StreamType, SpdyStream>();
  private readonly expected: number;
  private finished = false;
  private readyResolve: ((ok: boolean) => void) | undefined;
  private readonly statusJson: boolean;

  private connection: SpdyConnection | undefined;

  constructor(
    readonly protocol: string,
    private readonly cmd: string[],
    wanted: WantedStreams,
  ) {
    super();
    this.statusJson = protocol === 'v4.channel.k8s.io';
    const resizing = wanted.tty && (protocol === 'v4.channel.k8s.io' || protocol === 'v3.channel.k8s.io');
    this.expected = 1 + Number(wanted.stdin) + Number(wanted.stdout) + Number(wanted.stderr) + Number(resizing);
  }

  bind(connection: SpdyConnection): void {
    this.connection = connection;
  }

  /** For the connection's onStream: takes each stream by its type. */
  addStream(stream: SpdyStream): void {
    const type = stream.header('streamType') as StreamType | undefined;
    if (type !== 'error' && type !== 'stdin' && type !== 'stdout' && type !== 'stderr' && type !== 'resize') {
      stream.reset();
      return;
    }
    this.streams.set(type, stream);
    if (type === 'stdin') {
      stream.onData((chunk) => this.receivedStdin(chunk));
      stream.onEnd(() => this.receivedStdin(null));
    } else if (type === 'resize') {
      const sizes = new JsonObjectSplitter();
      stream.onData((chunk) => {
        for (const text of sizes.push(chunk.toString('utf8'))) {
          const size = parseResize(Buffer.from(text));
          if (size) this.receivedResize(size);
        }
      });
    } else {
      // Nothing is read from the output streams; their ends need no action.
      stream.onData(() => undefined);
      stream.onDrain(() => this.outputDrained());
    }
    if (this.streams.size >= this.expected) this.readyResolve?.(true);
  }

  /** Resolves true once the client opened every stream the request needs, false on timeout or loss. */
  waitForStreams(timeoutMs = STREAM_CREATION_TIMEOUT_MS): Promise<boolean> {
    if (this.streams.size >= this.expected) return Promise.resolve(true);
    return new Promise((resolve) => {
      const timer = setTimeout(() => resolve(false), timeoutMs);
      timer.unref();
      this.readyResolve = (ok) => {
        clearTimeout(timer);
        this.readyResolve = undefined;
        resolve(ok);
      };
    });
  }

  /** For channel.k8s.io the kubelet half-closes its side of the stdin stream once all streams are in. */
  closeUnusedStdin(): void {
    if (this.protocol === 'channel.k8s.io') this.streams.get('stdin')?.end();
  }

  writeStdout(chunk: Buffer): boolean {
    return this.write('stdout', chunk);
  }
  writeStderr(chunk: Buffer): boolean {
    return this.write('stderr', chunk);
  }

  private write(type: 'stdout' | 'stderr', chunk: Buffer): boolean {
    const stream = this.streams.get(type);
    if (this.finished || !stream) return true;
    return stream.write(chunk);
  }

  /** Either output stream drained: the writer resumes once neither needs to. */
  private outputDrained(): void {
    if (this.finished) return;
    const needDrain = ['stdout', 'stderr'].some((t) => this.streams.get(t as StreamType)?.writableNeedDrain);
    if (!needDrain) this.drained();
  }

  finish(outcome: StreamOutcome): void {
    if (this.finished) return;
    this.finished = true;
    const error = this.streams.get('error');
    if (error) {
      const text = this.statusJson ? JSON.stringify(statusFor(outcome, this.cmd)) : legacyErrorFor(outcome, this.cmd);
      if (text !== undefined) error.write(Buffer.from(text));
    }
    for (const stream of this.streams.values()) stream.end();
    this.connection?.close();
  }

  /** The connection ended before `finish`. */
  connectionClosed(): void {
    this.readyResolve?.(false);
    if (this.finished) return;
    this.finished = true;
    this.receivedStdin(null);
    this.clientWentAway();
  }
}

/** Splits a stream of concatenated JSON objects (Go's json.Decoder input) into whole objects. */
export class JsonObjectSplitter {
  private text = '';

  push(more: string): string[] {
    this.text += more;
    const objects: string[] = [];
    let depth = 0;
    let inString = false;
    let escaped = false;
    let start = -1;
    let consumed = 0;
    for (let i = 0; i < this.text.length; i++) {
      const c = this.text[i]!;
      if (inString) {
        if (escaped) escaped = false;
        else if (c === '\\') escaped = true;
        else if (c === '"') inString = false;
        continue;
      }
      if (c === '"') inString = true;
      else if (c === '{') {
        if (depth === 0) start = i;
        depth++;
      } else if (c === '}' && depth > 0) {
        depth--;
        if (depth === 0) {
          objects.push(this.text.slice(start, i + 1));
          consumed = i + 1;
        }
      }
    }
    this.text = this.text.slice(consumed);
    if (this.text.length > 64 * 1024) this.text = '';
    return objects;
  }
}
