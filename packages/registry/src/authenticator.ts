import type { Logger } from '@skiff/common';
import { raceSignal } from './abort.js';
import { readBody, readErrorSummary } from './body.js';
import { challengesFromHeader, type AuthChallenge } from './challenge.js';
import { basicAuthorization, basicCredentials, credentialsKey, hasCredentials, InvalidCredentialsError } from './credentials.js';
import { RegistryError } from './errors.js';
import type { HttpTransport, TransportResponse } from './http-transport.js';
import { isLoopbackHost } from './location.js';
import { TokenCache, type IssuedToken } from './token-cache.js';
import type { AuthCredentials } from './types.js';

/** Who is asking for what: the registry host, the access scope, and the pull's credentials. */
export interface AuthTarget {
  host: string;
  /** e.g. "repository:library/busybox:pull" */
  scope: string;
  credentials?: AuthCredentials;
  /** The registry itself is reached without verified TLS, so a plain-HTTP token server is no worse. */
  insecure: boolean;
}

const CLIENT_ID = 'skiff';
const TOKEN_RESPONSE_LIMIT = 1024 * 1024;

export function tokenCacheKey(realm: string, service: string, scopes: readonly string[], credentials: AuthCredentials | undefined): string {
  return JSON.stringify([realm, service, [...scopes].sort(), credentialsKey(credentials)]);
}

function basicHeaderFor(target: AuthTarget): string | undefined {
  try {
    const basic = basicCredentials(target.credentials);
    return basic ? basicAuthorization(basic) : undefined;
  } catch (err) {
    if (err instanceof InvalidCredentialsError) {
      throw new RegistryError('unauthorized', `cannot authenticate to ${target.host}: ${err.message}`);
    }
    throw err;
  }
}

/**
 * Produces Authorization headers for registry requests: basic credentials when a registry asks
 * for Basic, bearer tokens from the token server a Bearer challenge names (docker token
 * authentication and its OAuth2 variant), or a registry token given as is.
 */
export class Authenticator {
  /** The challenge each registry host answered with last, to authorize its next requests up front. */
  private readonly challenges = new Map<string, AuthChallenge>();

  constructor(
    private readonly transport: HttpTransport,
    private readonly logger: Logger,
    readonly tokens: TokenCache = new TokenCache(),
  ) {}

  /** The Authorization to send before the registry asks, if what it asked for earlier tells. */
  async preemptive(target: AuthTarget, signal?: AbortSignal): Promise<string | undefined> {
    if (target.credentials?.registryToken) return `Bearer ${target.credentials.registryToken}`;
    const challenge = this.challenges.get(target.host);
    if (!challenge) return undefined;
    if (challenge.scheme === 'basic') return basicHeaderFor(target);
    return this.bearer(target, challenge, false, signal);
  }

  /**
   * The Authorization to retry a request with after a 401 carrying `wwwAuthenticate`.
   * Throws RegistryError 'unauthorized' when there is nothing better to send.
   */
  async respond(target: AuthTarget, wwwAuthenticate: string | string[] | undefined, signal?: AbortSignal): Promise<string> {
    let challenges: AuthChallenge[];
    try {
      challenges = challengesFromHeader(wwwAuthenticate);
    } catch (err) {
      throw new RegistryError('protocol', `${target.host} sent a malformed WWW-Authenticate header (${(err as Error).message})`);
    }
    const challenge = challenges.find((c) => c.scheme === 'bearer') ?? challenges.find((c) => c.scheme === 'basic');
    if (!challenge) {
      const offered = challenges.map((c) => c.scheme).join(', ') || 'none';
      throw new RegistryError('unauthorized', `${target.host} requires authentication with a scheme Skiff does not support (offered: ${offered})`);
    }
    this.challenges.set(target.host, challenge);
    if (target.credentials?.registryToken) {
      throw new RegistryError('unauthorized', `authentication failed for ${target.host}: the registry token was rejected`);
    }
    if (challenge.scheme === 'basic') {
      const header = basicHeaderFor(target);
      if (!header) {
        throw new RegistryError('unauthorized', `authentication required for ${target.host}: it asks for a username and password and none were given`);
      }
      return header;
    }
    // A token the registry refused (revoked, or expired early) must not be offered again.
    return this.bearer(target, challenge, true, signal);
  }

  private async bearer(target: AuthTarget, challenge: AuthChallenge, refresh: boolean, signal?: AbortSignal): Promise<string> {
    const realm = challenge.params['realm'];
    if (!realm) throw new RegistryError('protocol', `${target.host} asks for a bearer token but names no token server (realm)`);
    const service = challenge.params['service'] ?? '';
    const scopes = [target.scope];
    for (const s of (challenge.params['scope'] ?? '').split(' ')) if (s !== '' && !scopes.includes(s)) scopes.push(s);
    const key = tokenCacheKey(realm, service, scopes, target.credentials);
    if (refresh) this.tokens.delete(key);
    // The fetch is shared by concurrent requests, so it does not follow any one caller's signal.
    const token = await raceSignal(
      this.tokens.getOrFetch(key, () => this.fetchToken(target, realm, service, scopes)),
      signal,
    );
    return `Bearer ${token}`;
  }

  private async fetchToken(target: AuthTarget, realm: string, service: string, scopes: string[]): Promise<IssuedToken> {
    let url: URL;
    try {
      url = new URL(realm);
    } catch {
      throw new RegistryError('protocol', `${target.host} names an invalid token server URL ${JSON.stringify(realm)}`);
    }
    if (url.protocol !== 'https:' && url.protocol !== 'http:') {
      throw new RegistryError('protocol', `${target.host} names a token server with unsupported scheme ${url.protocol}`);
    }
    if (url.protocol === 'http:' && hasCredentials(target.credentials) && !target.insecure && !isLoopbackHost(url.host)) {
      throw new RegistryError(
        'protocol',
        `${target.host} sends credentials to a plain-HTTP token server (${url.origin}); refusing. Mark the registry insecure in registries.conf to allow it`,
      );
    }
    this.logger.debug({ registry: target.host, realm: url.origin + url.pathname, service, scopes }, 'requesting registry token');
    const identityToken = target.credentials?.identityToken;
    let res: TransportResponse | undefined;
    if (identityToken) {
      const form = new URLSearchParams({ grant_type: 'refresh_token', refresh_token: identityToken, service, client_id: CLIENT_ID, scope: scopes.join(' ') });
      res = await this.transport.request({
        url,
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        body: form.toString(),
        skipVerify: target.insecure && url.host === target.host,
      });
      // Token servers without OAuth2 support answer 404; the GET flow still works for them.
      if (res.status === 404) {
        res.body.resume();
        res = undefined;
      }
    }
    if (!res) {
      const query = new URL(url);
      if (service) query.searchParams.set('service', service);
      for (const scope of scopes) query.searchParams.append('scope', scope);
      const basic = basicHeaderFor(target);
      const username = basicCredentials(target.credentials)?.username;
      if (username) query.searchParams.set('account', username);
      query.searchParams.set('client_id', CLIENT_ID);
      res = await this.transport.request({
        url: query,
        headers: basic ? { authorization: basic } : {},
        skipVerify: target.insecure && url.host === target.host,
      });
    }
    return this.readTokenResponse(target, url, res);
  }

  private async readTokenResponse(target: AuthTarget, url: URL, res: TransportResponse): Promise<IssuedToken> {
    const server = `token server ${url.host}`;
    if (res.status !== 200) {
      const summary = await readErrorSummary(res.body);
      const detail = `${server} answered ${res.status}${summary ? `: ${summary}` : ''}`;
      if (res.status === 401) {
        throw new RegistryError(
          'unauthorized',
          hasCredentials(target.credentials)
            ? `authentication failed for ${target.host}: ${detail}`
            : `authentication required for ${target.host}: ${detail}`,
        );
      }
      if (res.status === 403) throw new RegistryError('denied', `access to ${target.scope} on ${target.host} denied: ${detail}`);
      if (res.status === 429 || res.status >= 500) throw new RegistryError('unreachable', `cannot get a token for ${target.host}: ${detail}`);
      throw new RegistryError('protocol', `cannot get a token for ${target.host}: ${detail}`);
    }
    const bytes = await readBody(res.body, TOKEN_RESPONSE_LIMIT, () => new RegistryError('protocol', `${server} sent a token response over 1 MiB`));
    let body: Record<string, unknown>;
    try {
      body = JSON.parse(bytes.toString('utf8')) as Record<string, unknown>;
    } catch {
      throw new RegistryError('protocol', `${server} sent a token response that is not JSON`);
    }
    const token = typeof body['token'] === 'string' && body['token'] !== '' ? body['token'] : body['access_token'];
    if (typeof token !== 'string' || token === '') throw new RegistryError('protocol', `${server} sent no token (neither "token" nor "access_token")`);
    const expiresIn = body['expires_in'];
    return typeof expiresIn === 'number' ? { token, expiresInSeconds: expiresIn } : { token };
  }
}
