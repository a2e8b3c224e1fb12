import type { Readable } from 'node:stream';
import type { Logger } from '@skiff/common';
import { formatReference, isDigest, parseDigest, type ImageReference } from '@skiff/reference';
import { Authenticator, type AuthTarget } from './authenticator.js';
import { discardBody, readBody, readErrorSummary } from './body.js';
import { hasCredentials } from './credentials.js';
import { computeDigest, verifyDigest } from './digest.js';
import { apiHost, describeEndpoint, resolveEndpoints } from './endpoints.js';
import { RegistryError, type EndpointFailure } from './errors.js';
import { HttpTransport, isAbortError, type TransportResponse } from './http-transport.js';
import { MANIFEST_ACCEPT } from './media-types.js';
import { parseManifest, type ParsedManifest } from './manifest.js';
import { defaultPlatform, formatPlatform, listPlatforms, selectPlatformManifest } from './platform.js';
import type { RegistriesConfig } from './registries-config.js';
import type { AuthCredentials, Descriptor, Endpoint, Platform, ResolvedImage } from './types.js';

export const MAX_MANIFEST_BYTES = 4 * 1024 * 1024;
export const DEFAULT_MAX_BLOB_FETCH_BYTES = 8 * 1024 * 1024;
export const DEFAULT_USER_AGENT = 'skiff/0.1.0';
// An index may point at another index; deeper nesting is refused rather than followed forever.
const MAX_INDEX_DEPTH = 2;

export interface RegistryClientOptions {
  registries: RegistriesConfig;
  logger: Logger;
  /** The platform to pick from multi-platform images; default linux/<this machine>. */
  platform?: Platform;
  userAgent?: string;
  /** Per-registry CAs and client certificates; default /etc/containers/certs.d. */
  certsDir?: string;
  /** Trusted CAs for every registry; default /etc/ssl/certs/ca-certificates.crt. */
  caBundlePath?: string;
  timeouts?: { connectMs?: number; responseMs?: number; idleMs?: number };
}

export interface RequestOptions {
  auth?: AuthCredentials;
  signal?: AbortSignal;
}

interface FetchedManifest {
  digest: string;
  mediaType: string;
  parsed: ParsedManifest;
}

/** What a failed request was after, for error messages. */
interface RequestSubject {
  /** "image registry.k8s.io/pause:3.10" or "blob sha256:… of registry.k8s.io/pause:3.10" */
  what: string;
  notFound: string;
}

/**
 * Pulls from registries speaking the OCI distribution API: resolves references through
 * registries.conf mirrors to an image manifest for this platform, and serves its blobs.
 */
export class RegistryClient {
  readonly platform: Platform;
  private registries: RegistriesConfig;
  private readonly logger: Logger;
  private readonly transport: HttpTransport;
  private readonly authenticator: Authenticator;
  /** For insecure registries: whether HTTPS (unverified) or plain HTTP answered. */
  private readonly insecureSchemes = new Map<string, 'https:' | 'http:'>();

  constructor(opts: RegistryClientOptions) {
    this.registries = opts.registries;
    this.logger = opts.logger;
    this.platform = opts.platform ?? defaultPlatform();
    const tls: { certsDir?: string; caBundlePath?: string } = {};
    if (opts.certsDir !== undefined) tls.certsDir = opts.certsDir;
    if (opts.caBundlePath !== undefined) tls.caBundlePath = opts.caBundlePath;
    this.transport = new HttpTransport({
      userAgent: opts.userAgent ?? DEFAULT_USER_AGENT,
      tls,
      connectTimeoutMs: opts.timeouts?.connectMs,
      responseTimeoutMs: opts.timeouts?.responseMs,
      idleTimeoutMs: opts.timeouts?.idleMs,
    });
    this.authenticator = new Authenticator(this.transport, this.logger);
  }

  /**
   * Takes a re-read registries configuration and progress timeout (a live reload): pulls that
   * start from now on use them; pulls under way finish with what they began with.
   */
  reconfigure(registries: RegistriesConfig, idleTimeoutMs?: number): void {
    this.registries = registries;
    this.insecureSchemes.clear();
    if (idleTimeoutMs !== undefined) this.transport.setIdleTimeout(idleTimeoutMs);
  }

  /**
   * Finds the image manifest `ref` stands for on this platform, trying the configured mirrors in
   * order and then the origin. Throws RegistryError; the last endpoint's kind when all fail.
   */
  async resolve(ref: ImageReference, opts: RequestOptions = {}): Promise<ResolvedImage> {
    const endpoints = resolveEndpoints(this.registries, ref);
    const failures: EndpointFailure[] = [];
    let lastError: RegistryError | undefined;
    for (const [i, endpoint] of endpoints.entries()) {
      try {
        const image = await this.resolveAt(endpoint, ref, opts);
        if (failures.length > 0) {
          this.logger.info({ image: formatReference(ref), endpoint: describeEndpoint(endpoint) }, 'resolved after earlier endpoints failed');
        }
        return image;
      } catch (err) {
        if (isAbortError(err) || opts.signal?.aborted || !(err instanceof RegistryError)) throw err;
        lastError = err;
        failures.push({ endpoint: describeEndpoint(endpoint), kind: err.kind, message: err.message });
        if (i < endpoints.length - 1) {
          this.logger.warn({ image: formatReference(ref), endpoint: describeEndpoint(endpoint), kind: err.kind, err: err.message }, 'endpoint failed, trying the next');
        }
      }
    }
    if (failures.length === 1) throw lastError!;
    const summary = failures.map((f) => `${f.endpoint}: ${f.message}`).join('; ');
    throw new RegistryError(lastError!.kind, `cannot pull ${formatReference(ref)} from any of ${failures.length} endpoints: ${summary}`, {
      cause: lastError,
      attempts: failures,
    });
  }

  /**
   * A small blob (an image config) in memory, verified against the descriptor's size and digest.
   * Refuses blobs over `maxBytes` (default 8 MiB).
   */
  async fetchBlob(image: ResolvedImage, desc: Descriptor, opts: RequestOptions & { maxBytes?: number } = {}): Promise<Buffer> {
    const limit = opts.maxBytes ?? DEFAULT_MAX_BLOB_FETCH_BYTES;
    const what = `blob ${desc.digest} of ${formatReference(image.ref)}`;
    if (desc.size > limit) {
      throw new RegistryError('too-large', `${what} is ${desc.size} bytes, over the ${limit}-byte limit for blobs read into memory`);
    }
    const res = await this.openBlobResponse(image, desc, opts);
    const bytes = await readBody(
      res.body,
      desc.size,
      () => new RegistryError('digest-mismatch', `${what}: ${image.endpoint.host} sent more than the ${desc.size} bytes the manifest declares`),
    );
    if (bytes.length !== desc.size) {
      throw new RegistryError('digest-mismatch', `${what}: ${image.endpoint.host} sent ${bytes.length} bytes, the manifest declares ${desc.size}`);
    }
    verifyDigest(bytes, desc.digest, what);
    return bytes;
  }

  /** The blob's bytes as the registry (or the storage it redirects to) sends them; the caller verifies. */
  async openBlob(image: ResolvedImage, desc: Descriptor, opts: RequestOptions = {}): Promise<Readable> {
    const res = await this.openBlobResponse(image, desc, opts);
    return res.body;
  }

  /** Closes kept-alive connections. */
  close(): void {
    this.transport.close();
  }

  private async openBlobResponse(image: ResolvedImage, desc: Descriptor, opts: RequestOptions): Promise<TransportResponse> {
    if (!parseDigest(desc.digest)) throw new RegistryError('protocol', `cannot fetch blob: malformed digest ${JSON.stringify(desc.digest)}`);
    const { endpoint } = image;
    const subject: RequestSubject = {
      what: `blob ${desc.digest} of ${formatReference(image.ref)}`,
      notFound: `blob ${desc.digest} of ${formatReference(image.ref)} not found on ${endpoint.host} (repository ${endpoint.repository})`,
    };
    const credentials = this.credentialsFor(endpoint, image.ref, opts.auth);
    const res = await this.request(endpoint, `/v2/${endpoint.repository}/blobs/${desc.digest}`, { credentials, signal: opts.signal });
    if (res.status !== 200) throw await this.statusError(res, endpoint, subject, credentials);
    const length = res.headers['content-length'];
    if (length !== undefined && Number(length) !== desc.size) {
      discardBody(res.body);
      res.body.destroy();
      throw new RegistryError(
        'digest-mismatch',
        `${subject.what}: ${res.url.host} announces ${length} bytes, the manifest declares ${desc.size}`,
      );
    }
    return res;
  }

  private async resolveAt(endpoint: Endpoint, ref: ImageReference, opts: RequestOptions): Promise<ResolvedImage> {
    const credentials = this.credentialsFor(endpoint, ref, opts.auth);
    const reference = endpoint.reference ?? ref.digest ?? ref.tag ?? 'latest';
    const top = await this.fetchManifest(endpoint, ref, reference, credentials, opts.signal);
    let current = top;
    let platform: Platform | undefined;
    for (let depth = 0; current.parsed.kind === 'index'; depth++) {
      if (depth >= MAX_INDEX_DEPTH) {
        throw new RegistryError('invalid-manifest', `${formatReference(ref)}: image indexes nested more than ${MAX_INDEX_DEPTH} deep`);
      }
      const chosen = selectPlatformManifest(current.parsed.manifests, this.platform);
      if (!chosen) {
        const offered = listPlatforms(current.parsed.manifests);
        throw new RegistryError(
          'not-found',
          `image ${formatReference(ref)} has no manifest for platform ${formatPlatform(this.platform)} ` +
            `(it offers: ${offered.length > 0 ? offered.join(', ') : 'none'})`,
        );
      }
      if (chosen.size > MAX_MANIFEST_BYTES) {
        throw new RegistryError('too-large', `manifest ${chosen.digest} of ${formatReference(ref)} is ${chosen.size} bytes, over the ${MAX_MANIFEST_BYTES}-byte limit`);
      }
      platform = chosen.platform;
      current = await this.fetchManifest(endpoint, ref, chosen.digest, credentials, opts.signal);
    }
    if (current.parsed.kind !== 'manifest') throw new Error('unreachable: loop ends on an image manifest');
    return {
      ref,
      endpoint,
      topDigest: top.digest,
      topMediaType: top.mediaType,
      manifestDigest: current.digest,
      manifest: current.parsed.manifest,
      platform: platform ? { ...platform } : { ...this.platform },
    };
  }

  private async fetchManifest(
    endpoint: Endpoint,
    ref: ImageReference,
    reference: string,
    credentials: AuthCredentials | undefined,
    signal: AbortSignal | undefined,
  ): Promise<FetchedManifest> {
    const refText = formatReference(ref);
    const located =
      endpoint.repository === ref.path && reference === (ref.digest ?? ref.tag)
        ? ''
        : ` (as ${endpoint.repository}${isDigest(reference) ? '@' : ':'}${reference})`;
    const what = `${isDigest(reference) && reference !== ref.digest ? `manifest ${reference} of ` : ''}${refText} from ${describeEndpoint(endpoint)}`;
    const subject: RequestSubject = {
      what,
      notFound: `image ${refText}${isDigest(reference) && reference !== ref.digest ? ` (manifest ${reference})` : ''} not found on ${endpoint.host}${located}`,
    };
    const res = await this.request(endpoint, `/v2/${endpoint.repository}/manifests/${reference}`, {
      accept: MANIFEST_ACCEPT,
      credentials,
      signal,
    });
    if (res.status !== 200) throw await this.statusError(res, endpoint, subject, credentials);
    const tooLarge = (): RegistryError =>
      new RegistryError('too-large', `manifest of ${what} is over the ${MAX_MANIFEST_BYTES}-byte limit`);
    if (Number(res.headers['content-length'] ?? 0) > MAX_MANIFEST_BYTES) {
      discardBody(res.body);
      res.body.destroy();
      throw tooLarge();
    }
    const bytes = await readBody(res.body, MAX_MANIFEST_BYTES, tooLarge);

    let digest: string;
    if (isDigest(reference)) {
      verifyDigest(bytes, reference, `manifest of ${what}`);
      digest = reference;
    } else {
      digest = computeDigest(bytes);
      const announced = res.headers['docker-content-digest'];
      if (typeof announced === 'string' && announced !== '') {
        const algorithm = parseDigest(announced)?.algorithm;
        if (!algorithm) throw new RegistryError('protocol', `${endpoint.host} sent a malformed Docker-Content-Digest ${JSON.stringify(announced)}`);
        const check = algorithm === 'sha256' ? digest : computeDigest(bytes, algorithm);
        if (check !== announced) {
          throw new RegistryError('digest-mismatch', `manifest of ${what}: content has digest ${check}, the registry announced ${announced}`);
        }
      }
    }
    const contentType = res.headers['content-type'];
    const parsed = parseManifest(bytes, contentType, what);
    this.logger.debug({ image: refText, endpoint: describeEndpoint(endpoint), reference, digest, mediaType: parsed.mediaType }, 'fetched manifest');
    return { digest, mediaType: parsed.mediaType, parsed };
  }

  /**
   * Pull credentials belong to the image's registry: they go to the origin (even when
   * registries.conf relocates it) and to mirrors on that same host, never to other mirrors.
   */
  private credentialsFor(endpoint: Endpoint, ref: ImageReference, auth: AuthCredentials | undefined): AuthCredentials | undefined {
    if (!auth) return undefined;
    if (!endpoint.mirror) return auth;
    return endpoint.host === apiHost(ref.domain) ? auth : undefined;
  }

  /** Sends a GET with authorization, answering one 401 challenge. */
  private async request(
    endpoint: Endpoint,
    path: string,
    opts: { accept?: string; credentials: AuthCredentials | undefined; signal: AbortSignal | undefined },
  ): Promise<TransportResponse> {
    const target: AuthTarget = {
      host: endpoint.host,
      scope: `repository:${endpoint.repository}:pull`,
      insecure: endpoint.insecure || endpoint.plainHttp,
    };
    if (opts.credentials) target.credentials = opts.credentials;
    const headers = (authorization: string | undefined): Record<string, string> => {
      const h: Record<string, string> = {};
      if (opts.accept) h['accept'] = opts.accept;
      if (authorization) h['authorization'] = authorization;
      return h;
    };
    const authorization = await this.authenticator.preemptive(target, opts.signal);
    const res = await this.send(endpoint, path, headers(authorization), opts.signal);
    if (res.status !== 401) return res;
    discardBody(res.body);
    const retry = await this.authenticator.respond(target, res.headers['www-authenticate'], opts.signal);
    return this.send(endpoint, path, headers(retry), opts.signal);
  }

  /** Picks the scheme: HTTPS; plain HTTP for loopback; for insecure registries unverified HTTPS, then HTTP. */
  private async send(endpoint: Endpoint, path: string, headers: Record<string, string>, signal: AbortSignal | undefined): Promise<TransportResponse> {
    const url = (scheme: string): URL => new URL(`${scheme}//${endpoint.host}${path}`);
    if (endpoint.plainHttp) return this.transport.request({ url: url('http:'), headers, signal });
    if (!endpoint.insecure) return this.transport.request({ url: url('https:'), headers, signal });

    const known = this.insecureSchemes.get(endpoint.host);
    if (known) return this.transport.request({ url: url(known), headers, signal, skipVerify: known === 'https:' });
    try {
      const res = await this.transport.request({ url: url('https:'), headers, signal, skipVerify: true });
      this.insecureSchemes.set(endpoint.host, 'https:');
      return res;
    } catch (httpsError) {
      if (!(httpsError instanceof RegistryError) || httpsError.kind !== 'unreachable') throw httpsError;
      this.logger.debug({ registry: endpoint.host, err: httpsError.message }, 'HTTPS failed for insecure registry, trying plain HTTP');
      try {
        const res = await this.transport.request({ url: url('http:'), headers, signal });
        this.insecureSchemes.set(endpoint.host, 'http:');
        return res;
      } catch (httpError) {
        if (!(httpError instanceof RegistryError)) throw httpError;
        throw new RegistryError('unreachable', `${httpsError.message}; over plain HTTP: ${httpError.message}`, { cause: httpError });
      }
    }
  }

  private async statusError(
    res: TransportResponse,
    endpoint: Endpoint,
    subject: RequestSubject,
    credentials: AuthCredentials | undefined,
  ): Promise<RegistryError> {
    const summary = await readErrorSummary(res.body);
    const said = summary ? `: ${summary}` : '';
    const host = res.url.host;
    switch (true) {
      case res.status === 404:
        return new RegistryError('not-found', `${subject.notFound}${said}`);
      case res.status === 401:
        return new RegistryError(
          'unauthorized',
          hasCredentials(credentials)
            ? `authentication failed for ${host}${said}`
            : `authentication required for ${host}${said}; ${endpoint.repository} may be private (give pull credentials) or may not exist`,
        );
      case res.status === 403:
        return new RegistryError('denied', `access to ${subject.what} denied by ${host}${said}`);
      case res.status === 429:
        return new RegistryError('unreachable', `${host} is rate-limiting pulls (429)${said}`);
      case res.status >= 500:
        return new RegistryError('unreachable', `${host} failed with ${res.status} for ${subject.what}${said}`);
      default:
        return new RegistryError('protocol', `${host} answered ${res.status} for ${subject.what}${said}`);
    }
  }
}
