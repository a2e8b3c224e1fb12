/**
 * A small OCI distribution client over Node's fetch, with basic and bearer auth.
 *
 *   class RegistryError extends Error { status, method, url, body }
 *   parseAuthChallenge(header): { scheme, params } | undefined
 *   class RegistryClient(baseUrl, { credentials? })
 *     request(method, pathOrUrl, { headers?, body?, scope? }): Promise<Response>
 *     blobExists(repo, digest, scope?): Promise<boolean>
 *     uploadBlob(repo, blob, { chunkSize? }): Promise<'uploaded' | 'exists'>
 *     putManifest(repo, reference, body, mediaType): Promise<string>   digest from the registry
 *     getManifest(repo, reference, accept?): Promise<{ digest, mediaType, body }>
 *     getBlob(repo, digest): Promise<Buffer>
 *     deleteManifest(repo, digest): Promise<void>
 *     tokenFetches: number           token requests made so far
 *
 * A 401 is answered once per request: Basic challenges with the credentials,
 * Bearer challenges by fetching a token from the realm (service + scope, with
 * basic credentials when given) and retrying. Tokens are cached per scope.
 * Blob bodies are streamed from disk; chunked uploads use PATCH with
 * Content-Range, monolithic ones a single PUT ?digest=.
 */
import { createReadStream } from 'node:fs';
import { Readable } from 'node:stream';
import type { Credentials } from './htpasswd.js';
import { sha256Digest } from './sha256.js';

export class RegistryError extends Error {
  constructor(
    readonly method: string,
    readonly url: string,
    readonly status: number,
    readonly body: string,
  ) {
    super(`${method} ${url} -> ${status}: ${body.slice(0, 500)}`);
    this.name = 'RegistryError';
  }
}

export interface AuthChallenge {
  scheme: string;
  params: Record<string, string>;
}

export function parseAuthChallenge(header: string | null | undefined): AuthChallenge | undefined {
  if (!header) return undefined;
  const match = /^\s*(\w+)\s*(.*)$/s.exec(header);
  if (!match) return undefined;
  const params: Record<string, string> = {};
  for (const pair of match[2]!.matchAll(/(\w+)\s*=\s*(?:"((?:[^"\\]|\\.)*)"|([^\s,]+))/g)) {
    params[pair[1]!.toLowerCase()] = pair[2] !== undefined ? pair[2].replace(/\\(.)/g, '$1') : pair[3]!;
  }
  return { scheme: match[1]!.toLowerCase(), params };
}

/** A blob to upload: bytes in memory or a file on disk. */
export interface UploadableBlob {
  digest: string;
  size: number;
  path?: string;
  data?: Buffer;
}

export interface RequestOptions {
  headers?: Record<string, string>;
  /** A Buffer, or a factory of fresh streams (a retried request needs a new one). */
  body?: Buffer | (() => Readable);
  /** The scope this request needs, e.g. "repository:foo:pull,push". */
  scope?: string;
}

const MANIFEST_ACCEPT = [
  'application/vnd.oci.image.manifest.v1+json',
  'application/vnd.oci.image.index.v1+json',
  'application/vnd.docker.distribution.manifest.v2+json',
  'application/vnd.docker.distribution.manifest.list.v2+json',
  'application/vnd.docker.distribution.manifest.v1+prettyjws',
  'application/vnd.docker.distribution.manifest.v1+json',
];

export class RegistryClient {
  tokenFetches = 0;
  private readonly bearerTokens = new Map<string, string>();
  private basicHeader: string | undefined;
  private readonly credentials: Credentials | undefined;

  constructor(
    readonly baseUrl: string,
    options: { credentials?: Credentials } = {},
  ) {
    this.credentials = options.credentials;
  }

  async request(method: string, pathOrUrl: string, options: RequestOptions = {}): Promise<Response> {
    const url = new URL(pathOrUrl, this.baseUrl).toString();
    let response = await this.send(method, url, options, this.cachedAuth(options.scope));
    if (response.status !== 401) return response;
    const challenge = parseAuthChallenge(response.headers.get('www-authenticate'));
    const authorization = challenge ? await this.answerChallenge(challenge, options.scope) : undefined;
    if (authorization === undefined) return response;
    await response.arrayBuffer();
    response = await this.send(method, url, options, authorization);
    return response;
  }

  async blobExists(repo: string, digest: string, scope = pullScope(repo)): Promise<boolean> {
    const response = await this.request('HEAD', `/v2/${repo}/blobs/${digest}`, { scope });
    await response.arrayBuffer();
    if (response.status === 200) return true;
    if (response.status === 404) return false;
    throw new RegistryError('HEAD', response.url, response.status, '');
  }

  async uploadBlob(repo: string, blob: UploadableBlob, options: { chunkSize?: number } = {}): Promise<'uploaded' | 'exists'> {
    // Asking for push rights up front gets one token that covers the whole upload.
    const scope = pushScope(repo);
    if (await this.blobExists(repo, blob.digest, scope)) return 'exists';
    const start = await this.expect('POST', `/v2/${repo}/blobs/uploads/`, [202], { scope, headers: { 'Content-Length': '0' } });
    let location = requireLocation(start, this.baseUrl);
    const chunkSize = options.chunkSize;
    if (chunkSize !== undefined && chunkSize > 0 && blob.size > 0) {
      for (let offset = 0; offset < blob.size; offset += chunkSize) {
        const end = Math.min(offset + chunkSize, blob.size) - 1;
        const response = await this.expect('PATCH', location, [202], {
          scope,
          headers: {
            'Content-Type': 'application/octet-stream',
            'Content-Length': String(end - offset + 1),
            'Content-Range': `${offset}-${end}`,
          },
          body: blobBody(blob, offset, end),
        });
        location = requireLocation(response, this.baseUrl);
      }
      const finish = withDigest(location, blob.digest);
      await this.expect('PUT', finish, [201], { scope, headers: { 'Content-Length': '0' } });
    } else {
      await this.expect('PUT', withDigest(location, blob.digest), [201], {
        scope,
        headers: { 'Content-Type': 'application/octet-stream', 'Content-Length': String(blob.size) },
        body: blobBody(blob, 0, blob.size - 1),
      });
    }
    return 'uploaded';
  }

  async putManifest(repo: string, reference: string, body: Buffer, mediaType: string): Promise<string> {
    const response = await this.expect('PUT', `/v2/${repo}/manifests/${reference}`, [201], {
      scope: pushScope(repo),
      headers: { 'Content-Type': mediaType },
      body,
    });
    return response.headers.get('docker-content-digest') ?? sha256Digest(body);
  }

  async getManifest(repo: string, reference: string, accept: string[] = MANIFEST_ACCEPT): Promise<{ digest: string; mediaType: string; body: Buffer }> {
    const response = await this.expect('GET', `/v2/${repo}/manifests/${reference}`, [200], {
      scope: pullScope(repo),
      headers: { Accept: accept.join(', ') },
    });
    const body = Buffer.from(await response.arrayBuffer());
    return {
      digest: response.headers.get('docker-content-digest') ?? sha256Digest(body),
      mediaType: response.headers.get('content-type') ?? '',
      body,
    };
  }

  async getBlob(repo: string, digest: string): Promise<Buffer> {
    const response = await this.expect('GET', `/v2/${repo}/blobs/${digest}`, [200], { scope: pullScope(repo) });
    return Buffer.from(await response.arrayBuffer());
  }

  async deleteManifest(repo: string, digest: string): Promise<void> {
    await this.expect('DELETE', `/v2/${repo}/manifests/${digest}`, [202], { scope: `repository:${repo}:delete` });
  }

  /** Like request(), but throws a RegistryError unless the status is one of `ok`; a successful GET leaves the body to the caller. */
  private async expect(method: string, pathOrUrl: string, ok: number[], options: RequestOptions): Promise<Response> {
    const response = await this.request(method, pathOrUrl, options);
    if (!ok.includes(response.status)) {
      throw new RegistryError(method, response.url || pathOrUrl, response.status, await response.text());
    }
    if (method !== 'GET') await response.arrayBuffer();
    return response;
  }

  private cachedAuth(scope: string | undefined): string | undefined {
    if (scope !== undefined) {
      const token = this.bearerTokens.get(scope);
      if (token !== undefined) return `Bearer ${token}`;
    }
    return this.basicHeader;
  }

  private async answerChallenge(challenge: AuthChallenge, scopeHint: string | undefined): Promise<string | undefined> {
    if (challenge.scheme === 'basic') {
      if (this.credentials === undefined) return undefined;
      this.basicHeader = basicAuthHeader(this.credentials);
      return this.basicHeader;
    }
    if (challenge.scheme !== 'bearer' || challenge.params.realm === undefined) return undefined;
    // Ask for the caller's scope as well as the challenged one: a push starts with
    // a HEAD that is challenged for pull only, and one token should cover it all.
    const scopes = [...new Set([scopeHint, challenge.params.scope].filter((s): s is string => s !== undefined))];
    const tokenUrl = new URL(challenge.params.realm);
    if (challenge.params.service !== undefined) tokenUrl.searchParams.set('service', challenge.params.service);
    for (const scope of scopes) tokenUrl.searchParams.append('scope', scope);
    const headers: Record<string, string> = {};
    if (this.credentials !== undefined) headers.Authorization = basicAuthHeader(this.credentials);
    this.tokenFetches += 1;
    const response = await fetch(tokenUrl, { headers });
    if (response.status !== 200) {
      await response.arrayBuffer();
      return undefined;
    }
    const body = (await response.json()) as { token?: string; access_token?: string };
    const token = body.token ?? body.access_token;
    if (token === undefined) return undefined;
    for (const scope of scopes) this.bearerTokens.set(scope, token);
    return `Bearer ${token}`;
  }

  private send(method: string, url: string, options: RequestOptions, authorization: string | undefined): Promise<Response> {
    const headers: Record<string, string> = { ...options.headers };
    if (authorization !== undefined) headers.Authorization = authorization;
    const init: RequestInit & { duplex?: 'half' } = { method, headers };
    if (Buffer.isBuffer(options.body)) {
      init.body = new Uint8Array(options.body);
    } else if (options.body !== undefined) {
      init.body = Readable.toWeb(options.body()) as unknown as ReadableStream<Uint8Array>;
      init.duplex = 'half';
    }
    return fetch(url, init);
  }
}

export function pullScope(repo: string): string {
  return `repository:${repo}:pull`;
}

export function pushScope(repo: string): string {
  return `repository:${repo}:pull,push`;
}

function basicAuthHeader(credentials: Credentials): string {
  return `Basic ${Buffer.from(`${credentials.username}:${credentials.password}`).toString('base64')}`;
}

function requireLocation(response: Response, baseUrl: string): string {
  const location = response.headers.get('location');
  if (!location) throw new RegistryError('POST', response.url, response.status, 'upload response has no Location');
  return new URL(location, baseUrl).toString();
}

function withDigest(location: string, digest: string): string {
  const url = new URL(location);
  url.searchParams.set('digest', digest);
  return url.toString();
}

/** The byte range [start, end] of a blob, as a Buffer or a stream factory. */
function blobBody(blob: UploadableBlob, start: number, end: number): Buffer | (() => Readable) {
  if (blob.data !== undefined) return blob.data.subarray(start, end + 1);
  if (blob.path === undefined) throw new Error(`blob ${blob.digest} has neither data nor path`);
  const path = blob.path;
  if (end < start) return Buffer.alloc(0);
  return () => createReadStream(path, { start, end });
}
