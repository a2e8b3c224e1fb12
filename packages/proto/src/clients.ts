import { credentials, type ChannelOptions } from '@grpc/grpc-js';
import type { ImageServiceClient } from './generated/runtime/v1/ImageService.js';
import type { RuntimeServiceClient } from './generated/runtime/v1/RuntimeService.js';
import { loadCri } from './loader.js';

/** Largest message accepted or sent, either direction (grpc-js defaults to 4 MiB inbound). */
export const MAX_MESSAGE_BYTES = 64 * 1024 * 1024;

/** Channel options for CRI clients; also valid as grpc.Server options. */
export const CHANNEL_OPTIONS: Readonly<ChannelOptions> = Object.freeze({
  'grpc.max_receive_message_length': MAX_MESSAGE_BYTES,
  'grpc.max_send_message_length': MAX_MESSAGE_BYTES,
  // HTTP/2's default 64 KiB window makes a large response (ListImages, ListContainers) wait for
  // window updates round trip after round trip; on a local socket a larger window costs nothing.
  'grpc-node.flow_control_window': 8 * 1024 * 1024,
  // channelz (gRPC's introspection service, which Skiff does not serve) tracks every call and socket.
  'grpc.enable_channelz': 0,
});

/** grpc target for a unix socket path; an existing `unix:` target is kept. */
export function unixTarget(socketPath: string): string {
  return socketPath.startsWith('unix:') ? socketPath : `unix:${socketPath}`;
}

export function createRuntimeClient(socketPath: string, options: ChannelOptions = {}): RuntimeServiceClient {
  const { RuntimeService } = loadCri();
  return new RuntimeService(unixTarget(socketPath), credentials.createInsecure(), { ...CHANNEL_OPTIONS, ...options });
}

export function createImageClient(socketPath: string, options: ChannelOptions = {}): ImageServiceClient {
  const { ImageService } = loadCri();
  return new ImageService(unixTarget(socketPath), credentials.createInsecure(), { ...CHANNEL_OPTIONS, ...options });
}
