import { status } from '@grpc/grpc-js';
import { StatusError } from '@skiff/common';

/**
 * The answer to a call whose client went away (its deadline passed or it cancelled) before the
 * call made anything. The client never reads it; the daemon's log and metrics do.
 */
export function clientGoneError(call: string): StatusError {
  return new StatusError(status.CANCELLED, `${call}: the client went away (deadline passed or call cancelled) before anything was made; nothing was done`);
}

/** Stops a call at a point where it has made nothing yet if its client has gone. */
export function stopIfClientGone(signal: AbortSignal | undefined, call: string): void {
  if (signal?.aborted) throw clientGoneError(call);
}
