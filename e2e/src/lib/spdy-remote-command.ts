/**
 * A client for exec and attach stream URLs over SPDY/3.1, as client-go's remotecommand opens them:
 * an error stream, then resize (with a terminal), stdin, stdout and stderr streams, one per wanted
 * stream; a resize is a JSON {"Width","Height"} object on the resize stream.
 *
 *   openSpdyRemoteCommand(url, streams, protocol?): Promise<SpdyRemoteCommand>
 *   class SpdyRemoteCommand {
 *     stdout, stderr, status        what arrived so far (status: the parsed metav1.Status, if any)
 *     send(text), resize(width, height), closeStdin()
 *     waitForStdout(pattern, timeoutMs?), waitForStderr(...)   resolves with the text matched so far
 *     closed: Promise<void>         the connection ended
 *     close()                       a client that detaches: GOAWAY and the end of the connection
 *     vanish()                      drops the TCP connection
 *   }
 */
import { openSpdy, type SpdyClient } from '@skiff/stream-svc/testing/spdy-client';
import { RemoteOutput, type RemoteStatus } from './remote-output.js';

type SpdyStream = ReturnType<SpdyClient['connection']['createStream']>;

export interface WantedStreams {
  stdin?: boolean;
  stdout?: boolean;
  stderr?: boolean;
  tty?: boolean;
}

export class SpdyRemoteCommand extends RemoteOutput {
  readonly closed: Promise<void>;
  private ended = false;
  private readonly stdin: SpdyStream | undefined;
  private readonly resizeStream: SpdyStream | undefined;

  constructor(
    private readonly client: SpdyClient,
    wanted: WantedStreams,
  ) {
    super();
    const { connection } = client;
    const stream = (type: string): SpdyStream => connection.createStream(new Map([['streamtype', type]]));
    const notify = (): void => this.notify();
    let errorText = '';
    const error = stream('error');
    error.onData((c) => (errorText += c.toString('utf8')));
    error.onEnd(() => {
      if (errorText) this.status = JSON.parse(errorText) as RemoteStatus;
      notify();
    });
    if (wanted.tty) this.resizeStream = stream('resize');
    if (wanted.stdin) {
      this.stdin = stream('stdin');
      this.stdin.onData(() => undefined);
    }
    if (wanted.stdout) {
      stream('stdout').onData((c) => {
        this.stdout += c.toString('utf8');
        notify();
      });
    }
    if (wanted.stderr && !wanted.tty) {
      stream('stderr').onData((c) => {
        this.stderr += c.toString('utf8');
        notify();
      });
    }
    this.closed = client.closed.then(() => {
      this.ended = true;
      notify();
    });
  }

  send(text: string): void {
    this.stdin!.write(Buffer.from(text));
  }

  resize(width: number, height: number): void {
    this.resizeStream!.write(Buffer.from(JSON.stringify({ Width: width, Height: height })));
  }

  closeStdin(): void {
    this.stdin!.end();
  }

  close(): void {
    this.client.connection.close();
    this.client.socket?.end();
  }

  vanish(): void {
    this.client.socket?.destroy();
  }

  protected hasEnded(): boolean {
    return this.ended;
  }
}

export async function openSpdyRemoteCommand(url: string, wanted: WantedStreams, protocol = 'v4.channel.k8s.io'): Promise<SpdyRemoteCommand> {
  return new SpdyRemoteCommand(await openSpdy(url, [protocol]), wanted);
}
