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
