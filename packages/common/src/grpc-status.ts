import { status, Metadata, type ServiceError } from '@grpc/grpc-js';

export type GrpcCode = status;

/** An error that carries the gRPC status a handler should answer with. */
export class StatusError extends Error {
  constructor(readonly code: status, message: string) {
    super(message);
    this.name = 'StatusError';
  }
}

export function statusError(code: status, message: string): StatusError {
  return new StatusError(code, message);
}

/** Maps anything thrown by a handler to a ServiceError; unknown errors become Internal with their message. */
export function toServiceError(err: unknown): Partial<ServiceError> {
  if (err instanceof StatusError) return { code: err.code, details: err.message, metadata: new Metadata() };
  const message = err instanceof Error ? err.message : String(err);
  return { code: status.INTERNAL, details: message, metadata: new Metadata() };
}

/**
 * A service's rule for its failures: a StatusError stays as it is; an error `classify` knows gets
 * its code; otherwise a call its client cancelled is Cancelled (worded by `cancelled`), anything
 * else Internal. Every status keeps the error's message.
 */
export function statusForFailure(err: unknown, signal: AbortSignal | undefined, classify: (err: unknown) => status | undefined, cancelled: (message: string) => string): StatusError {
  if (err instanceof StatusError) return err;
  const message = err instanceof Error ? err.message : String(err);
  const code = classify(err);
  if (code !== undefined) return new StatusError(code, message);
  if (signal?.aborted) return new StatusError(status.CANCELLED, cancelled(message));
  return new StatusError(status.INTERNAL, message);
}

const LONGEST_WORD = 200;
const LONGEST_MESSAGE = 2048;

/**
 * A status message fit to send and log: messages quote what the client sent, and a client may
 * send megabytes in one field. Each overlong run without spaces keeps its start and says how
 * much was left out; the whole message is capped too.
 */
export function boundedStatusMessage(message: string): string {
  const words = message.replace(/\S{201,}/g, (word) => `${word.slice(0, LONGEST_WORD / 2)}…[${word.length - LONGEST_WORD / 2} more characters]`);
  return words.length <= LONGEST_MESSAGE ? words : `${words.slice(0, LONGEST_MESSAGE)}…[${words.length - LONGEST_MESSAGE} more characters]`;
}
