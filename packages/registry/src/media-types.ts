export const OCI_INDEX = 'application/vnd.oci.image.index.v1+json';
export const OCI_MANIFEST = 'application/vnd.oci.image.manifest.v1+json';
export const DOCKER_MANIFEST_LIST = 'application/vnd.docker.distribution.manifest.list.v2+json';
export const DOCKER_MANIFEST = 'application/vnd.docker.distribution.manifest.v2+json';
export const DOCKER_SCHEMA1_MANIFEST = 'application/vnd.docker.distribution.manifest.v1+json';
export const DOCKER_SCHEMA1_SIGNED_MANIFEST = 'application/vnd.docker.distribution.manifest.v1+prettyjws';
export const OCI_IMAGE_CONFIG = 'application/vnd.oci.image.config.v1+json';
export const DOCKER_IMAGE_CONFIG = 'application/vnd.docker.container.image.v1+json';

export const INDEX_MEDIA_TYPES: readonly string[] = [OCI_INDEX, DOCKER_MANIFEST_LIST];
export const IMAGE_MANIFEST_MEDIA_TYPES: readonly string[] = [OCI_MANIFEST, DOCKER_MANIFEST];
export const SCHEMA1_MEDIA_TYPES: readonly string[] = [DOCKER_SCHEMA1_MANIFEST, DOCKER_SCHEMA1_SIGNED_MANIFEST];
export const IMAGE_CONFIG_MEDIA_TYPES: readonly string[] = [OCI_IMAGE_CONFIG, DOCKER_IMAGE_CONFIG];

/** Accept header for manifest requests, best first. Schema 1 is left out so registries that can convert do. */
export const MANIFEST_ACCEPT = [OCI_INDEX, DOCKER_MANIFEST_LIST, OCI_MANIFEST, DOCKER_MANIFEST].join(', ');

/** Content types that say nothing about which manifest format a body is. */
const GENERIC_CONTENT_TYPES = new Set(['', 'application/json', 'text/plain', 'application/octet-stream']);

export function isIndexMediaType(mediaType: string): boolean {
  return INDEX_MEDIA_TYPES.includes(mediaType);
}

export function isImageManifestMediaType(mediaType: string): boolean {
  return IMAGE_MANIFEST_MEDIA_TYPES.includes(mediaType);
}

export function isManifestMediaType(mediaType: string): boolean {
  return isIndexMediaType(mediaType) || isImageManifestMediaType(mediaType);
}

/** "application/vnd.oci.image.index.v1+json; charset=utf-8" → "application/vnd.oci.image.index.v1+json". */
export function baseContentType(header: string | undefined): string {
  return (header ?? '').split(';')[0]!.trim().toLowerCase();
}

/**
 * The media type of a parsed manifest body: its own mediaType field, else a specific Content-Type,
 * else its shape (schemaVersion 1, a "manifests" list, or "config" with "layers").
 * Returns undefined when nothing identifies it.
 */
export function detectManifestMediaType(body: Record<string, unknown>, contentType?: string): string | undefined {
  if (typeof body['mediaType'] === 'string' && body['mediaType'] !== '') return body['mediaType'];
  if (body['schemaVersion'] === 1) {
    return 'signatures' in body ? DOCKER_SCHEMA1_SIGNED_MANIFEST : DOCKER_SCHEMA1_MANIFEST;
  }
  const header = baseContentType(contentType);
  if (!GENERIC_CONTENT_TYPES.has(header)) return header;
  if (Array.isArray(body['manifests'])) return OCI_INDEX;
  if (typeof body['config'] === 'object' && body['config'] !== null && Array.isArray(body['layers'])) return OCI_MANIFEST;
  return undefined;
}
