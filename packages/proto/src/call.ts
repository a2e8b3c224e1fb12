import { Metadata, type CallOptions, type Client, type ClientUnaryCall, type requestCallback } from '@grpc/grpc-js';

// Generated clients overload every unary method; inference reads the last
// overload, which is the (argument, callback) form.
type UnaryParts<F> =
  F extends (argument: infer Req, callback: requestCallback<infer Res>) => ClientUnaryCall
    ? { request: Req; response: Res }
    : never;

/** Names of the unary methods of a generated client (both spellings grpc-js provides). */
export type UnaryMethodName<C> = {
  [K in keyof C & string]: [UnaryParts<C[K]>] extends [never] ? never : K;
}[keyof C & string];

export type UnaryRequest<C, M extends UnaryMethodName<C>> = UnaryParts<C[M]>['request'];
export type UnaryResponse<C, M extends UnaryMethodName<C>> = UnaryParts<C[M]>['response'];

export interface UnaryCallOptions {
  /** Deadline relative to now, in milliseconds. */
  timeoutMs?: number;
  metadata?: Metadata;
  /** Cancels the call; the promise then rejects with a CANCELLED error. */
  signal?: AbortSignal;
}

type RawUnaryMethod<Req, Res> = (
  argument: Req,
  metadata: Metadata,
  options: CallOptions,
  callback: requestCallback<Res>,
) => ClientUnaryCall;

/**
 * Promise form of a unary call, e.g.
 * `await callUnary(imageClient, 'ImageFsInfo', {}, { timeoutMs: 2000 })`.
 * Rejects with the grpc ServiceError (carrying `code` and `details`).
 */
export function callUnary<C extends Client, M extends UnaryMethodName<C>>(
  client: C,
  method: M,
  request: UnaryRequest<C, M>,
  options: UnaryCallOptions = {},
): Promise<UnaryResponse<C, M>> {
  const invoke = client[method] as unknown as RawUnaryMethod<UnaryRequest<C, M>, UnaryResponse<C, M>>;
  const callOptions: CallOptions = {};
  if (options.timeoutMs !== undefined) callOptions.deadline = Date.now() + options.timeoutMs;

  return new Promise((resolve, reject) => {
    const call = invoke.call(client, request, options.metadata ?? new Metadata(), callOptions, (error, response) => {
      options.signal?.removeEventListener('abort', cancel);
      if (error) reject(error);
      else if (response === undefined) reject(new Error(`${method}: empty response`));
      else resolve(response);
    });
    function cancel(): void {
      call.cancel();
    }
    if (options.signal?.aborted) cancel();
    else options.signal?.addEventListener('abort', cancel, { once: true });
  });
}

/** Same as callUnary. */
export const call = callUnary;
