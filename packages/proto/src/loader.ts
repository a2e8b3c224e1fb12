import { fileURLToPath } from 'node:url';
import { loadPackageDefinition } from '@grpc/grpc-js';
import { loadSync, type Options } from '@grpc/proto-loader';
import type { ProtoGrpcType } from './generated/api.js';
import type { Container } from './generated/runtime/v1/Container.js';
import type { Image } from './generated/runtime/v1/Image.js';
import type { ImageServiceDefinition } from './generated/runtime/v1/ImageService.js';
import type { ImageStatusResponse } from './generated/runtime/v1/ImageStatusResponse.js';
import type { ListImagesResponse } from './generated/runtime/v1/ListImagesResponse.js';
import type { ListContainersResponse } from './generated/runtime/v1/ListContainersResponse.js';
import type { ListPodSandboxResponse } from './generated/runtime/v1/ListPodSandboxResponse.js';
import type { PodSandbox } from './generated/runtime/v1/PodSandbox.js';
import type { RuntimeServiceDefinition } from './generated/runtime/v1/RuntimeService.js';
import type { ListPodSandboxMetricsResponse } from './generated/runtime/v1/ListPodSandboxMetricsResponse.js';
import type { StreamPodSandboxMetricsResponse } from './generated/runtime/v1/StreamPodSandboxMetricsResponse.js';
import { ListResponseEncoder } from './list-entries.js';
import { MetricsResponseEncoder } from './metrics-encoder.js';

/** Absolute path of api.proto; the same from src/ and dist/. */
export const PROTO_PATH: string = fileURLToPath(new URL('../api.proto', import.meta.url));

/**
 * Options for @grpc/proto-loader. They must match the flags scripts/generate.mjs
 * passes to the type generator, or the generated types would lie about the
 * decoded objects: field names stay snake_case, 64-bit integers and enums are
 * strings, absent fields come back as defaults, oneofs get a virtual field.
 */
export const LOADER_OPTIONS: Readonly<Options> = Object.freeze({
  keepCase: true,
  longs: String,
  enums: String,
  defaults: true,
  oneofs: true,
});

let loaded: ProtoGrpcType | undefined;

/** Parses api.proto once and returns the grpc-js package object. */
export function loadCri(): ProtoGrpcType {
  if (loaded === undefined) {
    const packageDefinition = loadSync(PROTO_PATH, LOADER_OPTIONS);
    // grpc-js types the result loosely; the generated ProtoGrpcType is its exact shape.
    loaded = loadPackageDefinition(packageDefinition) as unknown as ProtoGrpcType;
  }
  return loaded;
}

const loadedRuntimeService: RuntimeServiceDefinition = loadCri().runtime.v1.RuntimeService.service;

/** ListContainers responses: a server seals the entries it lists again and again (see ListResponseEncoder). */
export const containerListEncoder = new ListResponseEncoder<ListContainersResponse, Container>(
  'containers',
  loadedRuntimeService.ListContainers.responseSerialize,
);

/** ListPodSandbox responses, likewise. */
export const podSandboxListEncoder = new ListResponseEncoder<ListPodSandboxResponse, PodSandbox>(
  'items',
  loadedRuntimeService.ListPodSandbox.responseSerialize,
);

/** ListPodSandboxMetrics responses, encoded straight to the wire (see MetricsResponseEncoder). */
export const podMetricsListEncoder = new MetricsResponseEncoder<ListPodSandboxMetricsResponse>('pod_metrics', loadedRuntimeService.ListPodSandboxMetrics.responseSerialize);

/** StreamPodSandboxMetrics responses, likewise. */
export const podMetricsStreamEncoder = new MetricsResponseEncoder<StreamPodSandboxMetricsResponse>(
  'pod_sandbox_metrics',
  loadedRuntimeService.StreamPodSandboxMetrics.responseSerialize,
);

/**
 * For `server.addService(runtimeServiceDefinition, handlers)`: the loaded definition, with list
 * responses encoded by the encoders above (the same bytes; sealed entries are not encoded again).
 * Clients never serialize responses, so the loaded client classes are left as they are.
 */
export const runtimeServiceDefinition: RuntimeServiceDefinition = {
  ...loadedRuntimeService,
  ListContainers: { ...loadedRuntimeService.ListContainers, responseSerialize: containerListEncoder.serialize },
  ListPodSandbox: { ...loadedRuntimeService.ListPodSandbox, responseSerialize: podSandboxListEncoder.serialize },
  ListPodSandboxMetrics: { ...loadedRuntimeService.ListPodSandboxMetrics, responseSerialize: podMetricsListEncoder.serialize },
  StreamPodSandboxMetrics: { ...loadedRuntimeService.StreamPodSandboxMetrics, responseSerialize: podMetricsStreamEncoder.serialize },
};

const loadedImageService: ImageServiceDefinition = loadCri().runtime.v1.ImageService.service;

/** ListImages responses: image-svc seals each image's entry once (see ListResponseEncoder). */
export const imageListEncoder = new ListResponseEncoder<ListImagesResponse, Image>('images', loadedImageService.ListImages.responseSerialize);

/**
 * ImageStatus responses: without `info` (verbose), the response is field 1 holding the image —
 * on the wire the very entry ListImages lists it with, so a sealed image's bytes are copied.
 */
function serializeImageStatus(response: ImageStatusResponse): Buffer {
  const noInfo = response.info === undefined || response.info === null || Object.keys(response.info).length === 0;
  if (noInfo && response.image) return imageListEncoder.serialize({ images: [response.image] });
  return loadedImageService.ImageStatus.responseSerialize(response);
}

/**
 * For `server.addService(imageServiceDefinition, handlers)`: as loaded, with ListImages and
 * ImageStatus responses encoded from sealed images (the same bytes), as runtimeServiceDefinition.
 */
export const imageServiceDefinition: ImageServiceDefinition = {
  ...loadedImageService,
  ListImages: { ...loadedImageService.ListImages, responseSerialize: imageListEncoder.serialize },
  ImageStatus: { ...loadedImageService.ImageStatus, responseSerialize: serializeImageStatus },
};
