import type { MuxChannel } from './mux.js';
import { TtrpcFrameReader, TtrpcMessageType, TtrpcProtocolError, encodeTtrpcFrame } from './ttrpc-frame.js';
import { decodeTtrpcRequest, decodeTtrpcResponse, encodeTtrpcRequest, encodeTtrpcResponse, type TtrpcStatus } from './ttrpc-messages.js';

/** gRPC status codes as ttrpc carries them. */
export const TtrpcCode = {
  Unknown: 2,
  InvalidArgument: 3,
  DeadlineExceeded: 4,
  FailedPrecondition: 9,
  Unimplemented: 12,
  Unavailable: 14,
} as const;

/** A failed call: the status the peer answered, or a timeout or a lost connection here. */
export class TtrpcCallError extends Error {
  constructor(
    readonly code: number,
    message: string,
  ) {
    super(message);
  }
}

export type TtrpcHandler = (payload: Uint8Array) => Promise<Uint8Array>;

/** At most this many of a peer's requests are served at once; one more closes the connection. */
export const MAX_CONCURRENT_INBOUND_REQUESTS = 64;

interface PendingCall {
  resolve: (payload: Uint8Array) => void;
  reject: (err: Error) => void;
  timer: NodeJS.Timeout;
}

/**
 * One side of ttrpc on one multiplexed channel: it calls (odd stream ids, as ttrpc clients use) and
 * serves the handlers registered under "<service>/<method>". A malformed frame or envelope, a
 * stream message or a flood of requests calls `fail`, which is expected to close the connection.
 */
export class TtrpcPeer {
  private readonly reader = new TtrpcFrameReader();
  private readonly calls = new Map<number, PendingCall>();
  private readonly handlers = new Map<string, TtrpcHandler>();
  private nextStreamId = 1;
  private inbound = 0;
  private closedReason: Error | null = null;

  constructor(
    private readonly channel: MuxChannel,
    private readonly fail: (reason: Error) => void,
  ) {
    channel.onData((bytes) => {
      try {
        for (const frame of this.reader.push(bytes)) this.dispatch(frame.streamId, frame.type, frame.payload);
      } catch (err) {
        this.fail(err instanceof Error ? err : new Error(String(err)));
      }
    });
  }

  handle(service: string, method: string, handler: TtrpcHandler): void {
    this.handlers.set(`${service}/${method}`, handler);
  }

  call(service: string, method: string, payload: Uint8Array, timeoutMs: number): Promise<Uint8Array> {
    if (this.closedReason) return Promise.reject(this.closedReason);
    const streamId = this.nextStreamId;
    this.nextStreamId += 2;
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        this.calls.delete(streamId);
        reject(new TtrpcCallError(TtrpcCode.DeadlineExceeded, `${method} got no answer within ${timeoutMs} ms`));
      }, timeoutMs);
      this.calls.set(streamId, { resolve, reject, timer });
      try {
        this.channel.write(encodeTtrpcFrame(streamId, TtrpcMessageType.Request, encodeTtrpcRequest({ service, method, payload, timeoutNanos: timeoutMs * 1e6 })));
      } catch (err) {
        clearTimeout(timer);
        this.calls.delete(streamId);
        reject(err);
      }
    });
  }

  /** Fails every call in flight; later calls fail at once. */
  close(reason: Error): void {
    if (this.closedReason) return;
    this.closedReason = reason;
    for (const [streamId, call] of this.calls) {
      clearTimeout(call.timer);
      this.calls.delete(streamId);
      call.reject(reason);
    }
  }

  private dispatch(streamId: number, type: number, payload: Buffer): void {
    if (type === TtrpcMessageType.Response) {
      const call = this.calls.get(streamId);
      if (!call) return; // answered after its timeout
      this.calls.delete(streamId);
      clearTimeout(call.timer);
      let response;
      try {
        response = decodeTtrpcResponse(payload);
      } catch (err) {
        call.reject(new TtrpcCallError(TtrpcCode.Unknown, `malformed ttrpc response: ${(err as Error).message}`));
        throw new TtrpcProtocolError('peer sent a malformed ttrpc response');
      }
      if (response.status && response.status.code !== 0) call.reject(new TtrpcCallError(response.status.code, response.status.message));
      else call.resolve(response.payload);
      return;
    }
    if (type !== TtrpcMessageType.Request) throw new TtrpcProtocolError('peer sent a ttrpc stream message; NRI uses unary calls only');
    if (streamId % 2 !== 1) throw new TtrpcProtocolError(`peer opened ttrpc stream ${streamId}; client streams are odd`);
    if (this.inbound >= MAX_CONCURRENT_INBOUND_REQUESTS) {
      throw new TtrpcProtocolError(`peer has more than ${MAX_CONCURRENT_INBOUND_REQUESTS} requests in flight`);
    }
    let request;
    try {
      request = decodeTtrpcRequest(payload);
    } catch (err) {
      throw new TtrpcProtocolError(`peer sent a malformed ttrpc request: ${(err as Error).message}`);
    }
    const handler = this.handlers.get(`${request.service}/${request.method}`);
    if (!handler) {
      this.answer(streamId, { code: TtrpcCode.Unimplemented, message: `${request.service}/${request.method} is not served here` }, new Uint8Array());
      return;
    }
    this.inbound += 1;
    handler(request.payload).then(
      (result) => {
        this.inbound -= 1;
        this.answer(streamId, null, result);
      },
      (err: unknown) => {
        this.inbound -= 1;
        const code = err instanceof TtrpcCallError ? err.code : TtrpcCode.Unknown;
        this.answer(streamId, { code, message: err instanceof Error ? err.message : String(err) }, new Uint8Array());
      },
    );
  }

  private answer(streamId: number, status: TtrpcStatus | null, payload: Uint8Array): void {
    if (this.closedReason) return;
    try {
      this.channel.write(encodeTtrpcFrame(streamId, TtrpcMessageType.Response, encodeTtrpcResponse({ status, payload })));
    } catch (err) {
      this.fail(err instanceof Error ? err : new Error(String(err)));
    }
  }
}
