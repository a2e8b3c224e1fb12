import { status, type ServerUnaryCall, type ServerWritableStream, type sendUnaryData } from '@grpc/grpc-js';
import type { Logger } from './logger.js';
import { boundedStatusMessage, type StatusError } from './grpc-status.js';

/** Turns whatever a call threw into the status the client gets; `signal` tells a cancelled call. */
export type ErrorMapper = (err: unknown, signal?: AbortSignal) => StatusError;

const STREAM_BATCH = 100;

/** Told of every answered call: its method, status name ("OK" for success) and duration. */
export type CallObserver = (method: string, code: string, seconds: number) => void;

let observer: CallObserver | undefined;

/** The daemon's metrics see every call answered through unaryCall and batchedStreamCall. */
export function setCallObserver(next: CallObserver): void {
  observer = next;
}

function observe(method: string, code: status, started: bigint): void {
  observer?.(method, status[code] ?? String(code), Number(process.hrtime.bigint() - started) / 1e9);
}

/** Wraps a promise-returning call implementation: a cancelled call aborts its signal, every error gets its gRPC status. */
export function unaryCall<Req, Res>(
  log: Logger,
  method: string,
  toStatus: ErrorMapper,
  implementation: (request: Req, signal: AbortSignal) => Promise<Res> | Res,
) {
  return (call: ServerUnaryCall<Req, Res>, callback: sendUnaryData<Res>): void => {
    const abort = new AbortController();
    let answered = false;
    // grpc-js reports every call's stream close as a cancellation, after the answer too:
    // aborting then would only build an AbortError nobody reads.
    call.once('cancelled', () => answered || abort.abort());
    const started = process.hrtime.bigint();
    Promise.resolve()
      .then(() => implementation(call.request, abort.signal))
      .then(
        (response) => {
          answered = true;
          log.debug({ method, ms: Number(process.hrtime.bigint() - started) / 1e6 }, 'call done');
          observe(method, status.OK, started);
          callback(null, response);
        },
        (err: unknown) => {
          answered = true;
          const error = toStatus(err, abort.signal);
          const details = boundedStatusMessage(error.message);
          log.warn({ method, code: error.code, err: details }, 'call failed');
          observe(method, error.code, started);
          callback({ code: error.code, details });
        },
      );
  };
}

/** A server-streaming List variant: the same items as the List call, sent in batches. */
export function batchedStreamCall<Req, Res, Item>(
  log: Logger,
  method: string,
  toStatus: ErrorMapper,
  list: (request: Req) => Promise<Item[]>,
  wrap: (items: Item[]) => Res,
) {
  return (call: ServerWritableStream<Req, Res>): void => {
    const started = process.hrtime.bigint();
    list(call.request).then(
      (items) => {
        for (let i = 0; i < items.length; i += STREAM_BATCH) call.write(wrap(items.slice(i, i + STREAM_BATCH)));
        call.end();
        observe(method, status.OK, started);
      },
      (err: unknown) => {
        const error = toStatus(err);
        const details = boundedStatusMessage(error.message);
        log.warn({ method, code: error.code, err: details }, 'call failed');
        observe(method, error.code, started);
        call.destroy(Object.assign(new Error(details), { code: error.code, details }));
      },
    );
  };
}
