// CRI RuntimeService calls this runtime does not implement: CheckpointContainer, CheckpointPod, RestorePod
import { status, type sendUnaryData } from '@grpc/grpc-js';

/** A unary call answered with Unimplemented. */
export function notImplemented(what: string) {
  return (_call: unknown, callback: sendUnaryData<never>): void => {
    callback({ code: status.UNIMPLEMENTED, details: `${what} is not supported by this runtime` });
  };
}
