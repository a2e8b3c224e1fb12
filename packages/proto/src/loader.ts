import { fileURLToPath } from 'node:url';
import { makeClientConstructor, type Client, type ServiceDefinition } from '@grpc/grpc-js';
import protobuf from 'protobufjs/light.js';
import { API_SCHEMA_JSON } from './generated/api-schema.js';
import type { Container } from './generated/runtime/v1/Container.js';
import type { Image } from './generated/runtime/v1/Image.js';
import type { ImageServiceClient, ImageServiceDefinition as GeneratedImageServiceDefinition } from './generated/runtime/v1/ImageService.js';
import type { ImageStatusResponse } from './generated/runtime/v1/ImageStatusResponse.js';
import type { ListImagesResponse } from './generated/runtime/v1/ListImagesResponse.js';
import type { ListContainersResponse } from './generated/runtime/v1/ListContainersResponse.js';
import type { ListPodSandboxResponse } from './generated/runtime/v1/ListPodSandboxResponse.js';
import type { PodSandbox } from './generated/runtime/v1/PodSandbox.js';
import type { RuntimeServiceClient, RuntimeServiceDefinition as GeneratedRuntimeServiceDefinition } from './generated/runtime/v1/RuntimeService.js';
import type { ListPodSandboxMetricsResponse } from './generated/runtime/v1/ListPodSandboxMetricsResponse.js';
import type { StreamPodSandboxMetricsResponse } from './generated/runtime/v1/StreamPodSandboxMetricsResponse.js';
import { ListResponseEncoder } from './list-entries.js';
import { MetricsResponseEncoder } from './metrics-encoder.js';

/** Absolute path of api.proto; the same from src/ and dist/. */
export const PROTO_PATH: string = fileURLToPath(new URL('../api.proto', import.meta.url));

/**
 * How decoded messages look, as the generated types describe them (scripts/generate.mjs passes
 * the type generator the same choices): field names stay snake_case, 64-bit integers and enums
 * are strings, absent fields come back as defaults, oneofs get a virtual field naming the one set.
 */
export const DECODED_FORM: Readonly<protobuf.IConversionOptions> = Object.freeze({
  longs: String,
  enums: String,
  defaults: true,
  oneofs: true,
});

/** A generated service definition as this loader builds it: grpc-js's fields, no descriptors. */
type LoadedDefinition<D> = { [M in keyof D]: Omit<D[M], 'requestType' | 'responseType' | 'options'> };
export type RuntimeServiceDefinition = LoadedDefinition<GeneratedRuntimeServiceDefinition>;
export type ImageServiceDefinition = LoadedDefinition<GeneratedImageServiceDefinition>;

type ClientClass<C, D> = (new (...args: ConstructorParameters<typeof Client>) => C) & { service: D; serviceName: string };

export interface CriServices {
  RuntimeService: ClientClass<RuntimeServiceClient, RuntimeServiceDefinition>;
  ImageService: ClientClass<ImageServiceClient, ImageServiceDefinition>;
  /** Every runtime.v1 message, enum and service, for reflection (protobufjs). */
  schema: protobuf.Namespace;
}

function serializerOf(type: protobuf.Type): (value: object) => Buffer {
  return (value) => {
    if (Array.isArray(value)) throw new Error(`a ${type.name} cannot be an array`);
    return type.encode(type.fromObject(value)).finish() as Buffer;
  };
}

function deserializerOf(type: protobuf.Type): (bytes: Buffer) => object {
  return (bytes) => type.toObject(type.decode(bytes), DECODED_FORM);
}

/** grpc-js's definition of one service: paths, stream flags and serializers of each method. */
function serviceDefinition(service: protobuf.Service): ServiceDefinition {
  const definition: Record<string, ServiceDefinition[string]> = {};
  for (const method of service.methodsArray) {
    method.resolve();
    const request = method.resolvedRequestType!;
    const response = method.resolvedResponseType!;
    definition[method.name] = {
      path: `/${service.fullName.slice(1)}/${method.name}`,
      requestStream: method.requestStream === true,
      responseStream: method.responseStream === true,
      requestSerialize: serializerOf(request),
      requestDeserialize: deserializerOf(request),
      responseSerialize: serializerOf(response),
      responseDeserialize: deserializerOf(response),
      originalName: method.name.charAt(0).toLowerCase() + method.name.slice(1),
    };
  }
  return definition;
}

function clientClass<C, D>(service: protobuf.Service): ClientClass<C, D> {
  // makeClientConstructor gives each method both its name and originalName, as the generated client types say.
  return makeClientConstructor(serviceDefinition(service), service.name) as unknown as ClientClass<C, D>;
}

let loaded: CriServices | undefined;

/**
 * The CRI services, built once from the schema scripts/generate.mjs wrote from api.proto, with
 * protobufjs's light runtime: no .proto parsing and no descriptor objects at start-up.
 */
export function loadCri(): CriServices {
  if (loaded === undefined) {
    const schema = protobuf.Root.fromJSON(JSON.parse(API_SCHEMA_JSON) as protobuf.INamespace).lookup('runtime.v1') as protobuf.Namespace;
    loaded = {
      RuntimeService: clientClass(schema.lookupService('RuntimeService')),
      ImageService: clientClass(schema.lookupService('ImageService')),
      schema,
    };
  }
  return loaded;
}

const loadedRuntimeService: RuntimeServiceDefinition = loadCri().RuntimeService.service;

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

const loadedImageService: ImageServiceDefinition = loadCri().ImageService.service;

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
