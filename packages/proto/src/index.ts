export {
  PROTO_PATH,
  DECODED_FORM,
  loadCri,
  runtimeServiceDefinition,
  imageServiceDefinition,
  imageListEncoder,
  containerListEncoder,
  podSandboxListEncoder,
  podMetricsListEncoder,
} from './loader.js';
export { ListResponseEncoder } from './list-entries.js';
export { MAX_MESSAGE_BYTES, CHANNEL_OPTIONS, unixTarget, createRuntimeClient, createImageClient } from './clients.js';
export { callUnary, call } from './call.js';
export type { UnaryCallOptions, UnaryMethodName, UnaryRequest, UnaryResponse } from './call.js';

export type { CriServices, RuntimeServiceDefinition, ImageServiceDefinition } from './loader.js';
export type { RuntimeServiceClient, RuntimeServiceHandlers } from './generated/runtime/v1/RuntimeService.js';
export type { ImageServiceClient, ImageServiceHandlers } from './generated/runtime/v1/ImageService.js';

/**
 * Every generated runtime.v1 type: `cri.X` is the permissive form a sender may
 * pass, `cri.X__Output` the fully-defaulted form a receiver gets; services
 * add `cri.<Service>Client`, `Handlers` and `Definition`.
 */
export type * as cri from './generated/cri.js';

export { NriConnection, NRI_API_PACKAGE, NRI_VERSION, nriMessageType } from './nri/nri-connection.js';
export type { PluginMethod, RuntimeMethod, PluginRequest, PluginResponse } from './nri/nri-connection.js';
export { TtrpcCallError, TtrpcCode, MAX_CONCURRENT_INBOUND_REQUESTS } from './nri/ttrpc-peer.js';
export { TtrpcProtocolError, TTRPC_HEADER_BYTES, TTRPC_MAX_PAYLOAD_BYTES, TtrpcMessageType, encodeTtrpcFrame } from './nri/ttrpc-frame.js';
export { MUX_HEADER_BYTES, MUX_MAX_PAYLOAD_BYTES, MuxConnId } from './nri/mux.js';
export { encodeTtrpcRequest } from './nri/ttrpc-messages.js';
/** Every generated NRI type (package nri.pkg.api.v1alpha1), in the same two forms as `cri`. */
export type * as nri from './generated/nri-types.js';
