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

/**
 * Why a call's signal was aborted (its `reason`): the client's deadline passed, and a client such
 * as the kubelet sends the call again; or the client cancelled or went away (its connection
 * closed: a kubelet killed), and nothing will ask for the call's result.
 */
export class ClientGone extends Error {
  constructor(readonly deadlinePassed: boolean) {
    super(deadlinePassed ? "the call's deadline passed" : 'the client cancelled the call or went away');
  }
}

/**
 * Whether the client behind `signal` cancelled or went away before its deadline: it will not
 * retry. A close already in the daemon's socket counts: the event loop reads its sockets once more
 * before the answer, so that a kubelet killed a moment ago, whose close the daemon has not yet
 * read, is not answered as if it were there.
 */
export async function clientLeft(signal: AbortSignal | undefined): Promise<boolean> {
  await socketsReadOnceMore();
  return signal?.aborted === true && signal.reason instanceof ClientGone && !signal.reason.deadlinePassed;
}

/**
 * Resolves after a poll for I/O that began after the call: events already waiting in the kernel
 * have been read, and what they set off synchronously or in next ticks (grpc-js's cancellation of
 * a call whose stream closed) has run. Called from a poll callback, a first setImmediate runs
 * in that same turn, before any new poll; the second runs a turn later, after one.
 */
async function socketsReadOnceMore(): Promise<void> {
  await new Promise((resolve) => setImmediate(resolve));
  await new Promise((resolve) => setImmediate(resolve));
}

/**
 * A cancellation this close to the deadline is the deadline's: the client's own timer may fire
 * before the server's, which starts when the call's headers have been read.
 */
const DEADLINE_SLACK_MS = 1000;

function deadlinePassed(deadline: Date | number): boolean {
  const at = deadline instanceof Date ? deadline.getTime() : deadline;
  return Number.isFinite(at) && Date.now() >= at - DEADLINE_SLACK_MS;
}

/** Wraps a promise-returning call implementation: a cancelled call aborts its signal (with a ClientGone), every error gets its gRPC status. */
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
    call.once('cancelled', () => answered || abort.abort(new ClientGone(deadlinePassed(call.getDeadline()))));
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
