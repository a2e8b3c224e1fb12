// CRI RuntimeService calls this runtime does not implement: CheckpointContainer, CheckpointPod, RestorePod,
// ListMetricDescriptors, ListPodSandboxMetrics, StreamPodSandboxMetrics
import { status, type ServerWritableStream, type sendUnaryData } from '@grpc/grpc-js';

/** A unary call answered with Unimplemented. */
export function notImplemented(what: string) {
  return (_call: unknown, callback: sendUnaryData<never>): void => {
    callback({ code: status.UNIMPLEMENTED, details: `${what} is not supported by this runtime` });
  };
}

/** A server-streaming call ended with Unimplemented. */
export function notImplementedStream(what: string) {
  return (call: ServerWritableStream<unknown, unknown>): void => {
    call.destroy(Object.assign(new Error(`${what} is not supported by this runtime`), { code: status.UNIMPLEMENTED }));
  };
}
