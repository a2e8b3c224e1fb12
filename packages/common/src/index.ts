export * from './core.js';
export { StatusError, statusError, statusForFailure, toServiceError, type GrpcCode } from './grpc-status.js';
export { listenOnUnixSocket, type UnixSocketServer } from './unix-socket-server.js';
export { unaryCall, batchedStreamCall, setCallObserver, ClientGone, clientLeft, type CallObserver, type ErrorMapper } from './grpc-calls.js';
