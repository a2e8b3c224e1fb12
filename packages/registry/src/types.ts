import type { ImageReference } from '@skiff/reference';

export interface Platform {
  os: string;
  architecture: string;
  variant?: string;
}

export interface Descriptor {
  mediaType: string;
  digest: string;
  size: number;
  annotations?: Record<string, string>;
  platform?: Platform;
}

/**
 * Credentials for one pull, as the kubelet hands them over (CRI AuthConfig).
 * `auth` is base64("user:password"); `identityToken` is an OAuth2 refresh token;
 * `registryToken` is a bearer token sent as is.
 */
export interface AuthCredentials {
  username?: string;
  password?: string;
  auth?: string;
  identityToken?: string;
  registryToken?: string;
}

/** One place a pull can be served from: a mirror or the origin, after registries.conf rewriting. */
export interface Endpoint {
  /** host[:port], as in a reference ("[::1]:5000" for IPv6). */
  host: string;
  /** Repository path on that host. */
  repository: string;
  /** TLS without certificate verification, falling back to plain HTTP. */
  insecure: boolean;
  /** Plain HTTP only (loopback hosts). */
  plainHttp: boolean;
  mirror: boolean;
  /**
   * Tag or digest to ask this endpoint for, when the configuration rewrote it
   * (a prefix or location naming a tag or digest); otherwise the reference's own.
   */
  reference?: string;
}

export interface ImageManifest {
  mediaType: string;
  config: Descriptor;
  layers: Descriptor[];
  annotations?: Record<string, string>;
}

export interface ResolvedImage {
  ref: ImageReference;
  /** The mirror or origin that answered. */
  endpoint: Endpoint;
  /** Digest of what the tag or digest points at (an index or a manifest). */
  topDigest: string;
  topMediaType: string;
  /** Digest of the platform's image manifest. */
  manifestDigest: string;
  manifest: ImageManifest;
  /**
   * The platform chosen from an index; for a single-platform manifest, the
   * platform asked for (the manifest names none, its config does).
   */
  platform: Platform;
}
