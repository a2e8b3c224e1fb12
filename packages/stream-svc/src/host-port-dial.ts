import { EventEmitter } from 'node:events';
import { connect, type Socket } from 'node:net';
import { PassThrough, type Readable, type Writable } from 'node:stream';

/** One TCP connection to a pod's port, as a child process's stdio or as a socket of our own. */
export interface PortConnection {
  readonly stdout: Readable;
  readonly stdin: Writable;
  readonly stderr: Readable;
  readonly exitCode: number | null;
  kill(signal?: NodeJS.Signals): boolean;
  on(event: 'close' | 'exit', listener: (code: number | null) => void): this;
  on(event: 'error', listener: (err: Error) => void): this;
}

/** Where the kubelet's own port-forward dials a pod on the host network: localhost, IPv4 first. */
export const LOOPBACK_ADDRESSES = ['127.0.0.1', '::1'] as const;

/**
 * A connection to `port` on loopback from stream-svc's own network namespace, which a pod on the
 * host network shares with the runtime: 127.0.0.1, and ::1 when IPv4 refuses. It behaves like the
 * `nc` child used for other pods: output on stdout, input on stdin (its end half-closes the
 * connection), a refusal written to stderr with exit code 1, code 0 once the connection closes.
 */
export class HostPortConnection extends EventEmitter implements PortConnection {
  readonly stdout = new PassThrough();
  readonly stdin = new PassThrough();
  readonly stderr = new PassThrough();
  exitCode: number | null = null;
  private socket: Socket | undefined;

  constructor(port: number) {
    super();
    this.dial(port, 0);
  }

  kill(): boolean {
    if (this.exitCode !== null) return false;
    this.socket?.destroy();
    this.finish(1);
    return true;
  }

  private dial(port: number, attempt: number): void {
    const host = LOOPBACK_ADDRESSES[attempt]!;
    const socket = connect({ host, port });
    this.socket = socket;
    const refused = (err: NodeJS.ErrnoException): void => {
      if (attempt + 1 < LOOPBACK_ADDRESSES.length && (err.code === 'ECONNREFUSED' || err.code === 'EADDRNOTAVAIL')) {
        this.dial(port, attempt + 1);
        return;
      }
      this.stderr.end(`cannot connect to port ${port} on ${LOOPBACK_ADDRESSES.join(' or ')}: ${err.message}`);
      this.finish(1);
    };
    socket.once('error', refused);
    socket.once('connect', () => {
      socket.off('error', refused);
      socket.on('error', (err) => this.stderr.write(`${err.message}\n`));
      socket.pipe(this.stdout);
      this.stdin.pipe(socket);
      socket.once('close', (hadError) => {
        this.stderr.end();
        this.finish(hadError ? 1 : 0);
      });
    });
  }

  private finish(code: number): void {
    if (this.exitCode !== null) return;
    this.exitCode = code;
    if (!this.stdout.writableEnded) this.stdout.end();
    if (!this.stderr.writableEnded) this.stderr.end();
    this.emit('exit', code);
    this.emit('close', code);
  }
}
