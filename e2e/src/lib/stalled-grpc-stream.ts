/**
 * A server-streaming gRPC call over plain node:http2 whose client does not read: its stream's
 * flow-control window starts at 0, so the server can send headers and trailers but no message
 * until `resume()` opens the window (grpc-js clients read everything they are sent, whatever
 * their stream's pause state, so they cannot hold a server back).
 */
import { connect, constants, type ClientHttp2Session, type ClientHttp2Stream } from 'node:http2';
import { connect as connectSocket } from 'node:net';

export interface StalledCallEnd {
  /** grpc-status of the trailers (or of a trailers-only answer); undefined when the stream ended without one. */
  status: number | undefined;
  message: string;
  /** Messages received, after resume(). */
  messages: number;
}

export class StalledGrpcStream {
  readonly ended: Promise<StalledCallEnd>;
  private readonly session: ClientHttp2Session;
  private readonly stream: ClientHttp2Stream;
  private received = Buffer.alloc(0);
  private messages = 0;

  /** `path`: /package.Service/Method; `request`: the encoded request message. */
  constructor(socketPath: string, path: string, request: Buffer = Buffer.alloc(0)) {
    this.session = connect('http://localhost', { createConnection: () => connectSocket(socketPath), settings: { initialWindowSize: 0 } });
    this.session.on('error', () => undefined);
    this.stream = this.session.request({
      [constants.HTTP2_HEADER_METHOD]: 'POST',
      [constants.HTTP2_HEADER_PATH]: path,
      [constants.HTTP2_HEADER_CONTENT_TYPE]: 'application/grpc',
      [constants.HTTP2_HEADER_TE]: 'trailers',
    });
    const frame = Buffer.alloc(5 + request.length);
    frame.writeUInt32BE(request.length, 1);
    request.copy(frame, 5);
    this.stream.end(frame);
    this.ended = new Promise((resolve) => {
      let status: number | undefined;
      let message = '';
      const take = (headers: Record<string, unknown>): void => {
        if (headers['grpc-status'] !== undefined) {
          status = Number(headers['grpc-status']);
          message = decodeURIComponent(String(headers['grpc-message'] ?? ''));
        }
      };
      this.stream.on('response', take);
      this.stream.on('trailers', take);
      this.stream.on('error', () => undefined);
      this.stream.on('close', () => resolve({ status, message, messages: this.messages }));
    });
  }

  /** Reads from now on: opens the window and counts the messages that arrive. */
  resume(): void {
    this.stream.on('data', (chunk: Buffer) => {
      this.received = Buffer.concat([this.received, chunk]);
      while (this.received.length >= 5 && this.received.length >= 5 + this.received.readUInt32BE(1)) {
        this.received = this.received.subarray(5 + this.received.readUInt32BE(1));
        this.messages++;
      }
    });
    this.session.settings({ initialWindowSize: 65_535 });
  }

  close(): void {
    this.stream.close();
    this.session.close();
  }
}
