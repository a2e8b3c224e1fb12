import { parseDigest } from '@skiff/reference';
import { RegistryError } from './errors.js';
import {
  IMAGE_CONFIG_MEDIA_TYPES,
  SCHEMA1_MEDIA_TYPES,
  detectManifestMediaType,
  isImageManifestMediaType,
  isIndexMediaType,
} from './media-types.js';
import type { Descriptor, ImageManifest, Platform } from './types.js';

export interface ParsedIndex {
  kind: 'index';
  mediaType: string;
  manifests: Descriptor[];
}

export interface ParsedImageManifest {
  kind: 'manifest';
  mediaType: string;
  manifest: ImageManifest;
}

export type ParsedManifest = ParsedIndex | ParsedImageManifest;

type Json = Record<string, unknown>;

function isObject(value: unknown): value is Json {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function stringRecord(value: unknown, what: string, fail: (m: string) => never): Record<string, string> | undefined {
  if (value === undefined) return undefined;
  if (!isObject(value) || !Object.values(value).every((v) => typeof v === 'string')) fail(`${what} must be an object of strings`);
  return value as Record<string, string>;
}

function parsePlatform(value: unknown, what: string, fail: (m: string) => never): Platform | undefined {
  if (value === undefined) return undefined;
  if (!isObject(value) || typeof value['os'] !== 'string' || typeof value['architecture'] !== 'string') {
    fail(`${what}.platform must have string "os" and "architecture"`);
  }
  const platform: Platform = { os: value['os'], architecture: value['architecture'] };
  if (typeof value['variant'] === 'string' && value['variant'] !== '') platform.variant = value['variant'];
  return platform;
}

export function parseDescriptor(value: unknown, what: string, fail: (m: string) => never): Descriptor {
  if (!isObject(value)) fail(`${what} must be an object`);
  const { mediaType, digest, size } = value;
  if (typeof mediaType !== 'string' || mediaType === '') fail(`${what} has no mediaType`);
  if (typeof digest !== 'string' || !parseDigest(digest)) fail(`${what} has a malformed digest ${JSON.stringify(digest)}`);
  if (typeof size !== 'number' || !Number.isSafeInteger(size) || size < 0) fail(`${what} has an invalid size ${JSON.stringify(size)}`);
  const descriptor: Descriptor = { mediaType, digest, size };
  const annotations = stringRecord(value['annotations'], `${what}.annotations`, fail);
  if (annotations) descriptor.annotations = annotations;
  const platform = parsePlatform(value['platform'], what, fail);
  if (platform) descriptor.platform = platform;
  return descriptor;
}

function unsupportedMessage(mediaType: string, what: string): string {
  if (SCHEMA1_MEDIA_TYPES.includes(mediaType)) {
    return (
      `${what} uses the Docker image manifest schema 1 (${mediaType}), which is deprecated and not supported; ` +
      'push the image again with a current tool (for example `skopeo copy --format v2s2` or `docker push` from Docker 1.10 or later)'
    );
  }
  return (
    `${what} has manifest media type ${mediaType}, which is not a container image format Skiff supports ` +
    '(OCI image manifest or index, Docker manifest schema 2 or manifest list); check that the reference names a container image'
  );
}

/**
 * Parses and validates manifest bytes. `what` names the manifest in error messages
 * ("docker.io/library/busybox:1.36 from registry-1.docker.io").
 */
export function parseManifest(bytes: Buffer, contentType: string | undefined, what: string): ParsedManifest {
  const fail = (message: string): never => {
    throw new RegistryError('invalid-manifest', `invalid manifest for ${what}: ${message}`);
  };
  let body: unknown;
  try {
    body = JSON.parse(bytes.toString('utf8'));
  } catch (err) {
    return fail(`not valid JSON (${(err as Error).message})`);
  }
  if (!isObject(body)) return fail('not a JSON object');

  const mediaType = detectManifestMediaType(body, contentType);
  if (mediaType === undefined) return fail('it has no mediaType and its shape is neither an image manifest nor an index');
  if (!isIndexMediaType(mediaType) && !isImageManifestMediaType(mediaType)) {
    throw new RegistryError('unsupported-media-type', unsupportedMessage(mediaType, what));
  }
  if (body['schemaVersion'] !== undefined && body['schemaVersion'] !== 2) {
    fail(`schemaVersion ${JSON.stringify(body['schemaVersion'])} does not go with media type ${mediaType}`);
  }

  if (isIndexMediaType(mediaType)) {
    if (!Array.isArray(body['manifests'])) fail('an index needs a "manifests" array');
    const manifests = (body['manifests'] as unknown[]).map((m, i) => parseDescriptor(m, `manifests[${i}]`, fail));
    return { kind: 'index', mediaType, manifests };
  }

  const config = parseDescriptor(body['config'], 'config', fail);
  if (!IMAGE_CONFIG_MEDIA_TYPES.includes(config.mediaType)) {
    throw new RegistryError(
      'unsupported-media-type',
      `${what} is not a container image: its config has media type ${config.mediaType} ` +
        '(an OCI artifact such as a Helm chart, signature or SBOM); check the reference',
    );
  }
  if (!Array.isArray(body['layers'])) fail('an image manifest needs a "layers" array');
  const layers = (body['layers'] as unknown[]).map((l, i) => parseDescriptor(l, `layers[${i}]`, fail));
  const manifest: ImageManifest = { mediaType, config, layers };
  const annotations = stringRecord(body['annotations'], 'annotations', fail);
  if (annotations) manifest.annotations = annotations;
  return { kind: 'manifest', mediaType, manifest };
}
