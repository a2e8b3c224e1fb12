export { RegistryError, isRegistryError, type RegistryErrorKind, type EndpointFailure } from './errors.js';
export type { Descriptor, Platform, AuthCredentials, Endpoint, ImageManifest, ResolvedImage } from './types.js';
export {
  parseRegistriesConfig,
  loadRegistriesConfig,
  emptyRegistriesConfig,
  RegistriesConfigError,
  type RegistriesConfig,
  type RegistryEntry,
  type RegistryMirror,
  type PullFromMirror,
} from './registries-config.js';
export { resolveEndpoints, findRegistryEntry } from './endpoints.js';
export {
  RegistryClient,
  MAX_MANIFEST_BYTES,
  DEFAULT_MAX_BLOB_FETCH_BYTES,
  DEFAULT_USER_AGENT,
  type RegistryClientOptions,
  type RequestOptions,
} from './registry-client.js';
export { parseAuthChallenges, type AuthChallenge } from './challenge.js';
export { defaultPlatform, normalizePlatform, formatPlatform, selectPlatformManifest } from './platform.js';
export * as MediaTypes from './media-types.js';
