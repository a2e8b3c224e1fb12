/**
 * A token server for the registry's bearer-token auth, on 127.0.0.1.
 *
 *   interface ResourceActions { type, name, actions }
 *   interface TokenServerOptions {
 *     username?, password?           the one account (default skiff / skiff-secret)
 *     service?, issuer?              must match the registry's auth.token settings
 *     expiresInSeconds?              token lifetime (default 300)
 *     anonymous?: 'deny' | 'empty' | 'pull'
 *                                    no credentials: 401, a token granting nothing
 *                                    (default), or a token granting pull
 *     grant?(subject, requested): string[]   narrows what an authenticated user gets
 *   }
 *   startTokenServer(options?): Promise<TokenServer>
 *   interface TokenServer {
 *     url, realm ("<url>/token"), service, issuer, certPath, keyPath,
 *     readonly issued: number              tokens issued since start or reset
 *     readonly requests: TokenRequestRecord[]
 *     resetCounters(): void
 *     registryAuth(): RegistryTokenAuth    pass to startRegistry({ token })
 *     mintToken(subject, access, { expiresInSeconds?, notBefore? }?): string
 *     stop(): Promise<void>
 *   }
 *
 * GET /token?service=&scope=&offline_token= with optional basic auth answers
 * { token, access_token, expires_in, issued_at[, refresh_token] }. POST /token takes
 * the OAuth2 form (grant_type=password with username/password, or
 * grant_type=refresh_token with refresh_token) and always returns a refresh_token.
 * Tokens are RS256 JWTs whose x5c header carries the self-signed certificate that
 * the registry trusts through rootcertbundle; key and certificate come from the
 * openssl CLI.
 */
import { execFile } from 'node:child_process';
import { randomBytes, sign, X509Certificate } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { promisify } from 'node:util';
import type { RegistryTokenAuth } from './registry.js';
import { makeTempDir, removeDir } from './tmp.js';

const run = promisify(execFile);

export interface ResourceActions {
  type: string;
  name: string;
  actions: string[];
}

export interface TokenServerOptions {
  username?: string;
  password?: string;
  service?: string;
  issuer?: string;
  expiresInSeconds?: number;
  anonymous?: 'deny' | 'empty' | 'pull';
  grant?: (subject: string, requested: ResourceActions) => string[];
}

export interface TokenRequestRecord {
  method: string;
  grantType: 'anonymous' | 'basic' | 'password' | 'refresh_token';
  subject: string | undefined;
  scopes: string[];
  status: number;
  access: ResourceActions[];
}

export interface TokenServer {
  url: string;
  realm: string;
  service: string;
  issuer: string;
  certPath: string;
  keyPath: string;
  readonly issued: number;
  readonly requests: TokenRequestRecord[];
  resetCounters(): void;
  registryAuth(): RegistryTokenAuth;
  mintToken(subject: string, access: ResourceActions[], options?: { expiresInSeconds?: number; notBefore?: number }): string;
  stop(): Promise<void>;
}

const base64url = (data: Buffer | string): string => Buffer.from(data).toString('base64url');

/** "repository:foo/bar:pull,push" (several may be space-separated) into resource actions. */
export function parseScopes(scopes: string[]): ResourceActions[] {
  const merged = new Map<string, ResourceActions>();
  for (const scope of scopes.flatMap((s) => s.split(' ')).filter((s) => s !== '')) {
    const parts = scope.split(':');
    if (parts.length < 3) continue;
    const type = parts[0]!;
    const actions = parts[parts.length - 1]!.split(',').filter((a) => a !== '');
    const name = parts.slice(1, -1).join(':');
    const key = `${type}:${name}`;
    const entry = merged.get(key) ?? { type, name, actions: [] };
    for (const action of actions) if (!entry.actions.includes(action)) entry.actions.push(action);
    merged.set(key, entry);
  }
  return [...merged.values()];
}

function basicCredentials(header: string | undefined): { username: string; password: string } | undefined {
  if (header === undefined || !/^basic /i.test(header)) return undefined;
  const decoded = Buffer.from(header.slice(6).trim(), 'base64').toString('utf8');
  const colon = decoded.indexOf(':');
  if (colon < 0) return undefined;
  return { username: decoded.slice(0, colon), password: decoded.slice(colon + 1) };
}

async function readBody(request: IncomingMessage): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of request) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString('utf8');
}

function sendJson(response: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void {
  const text = JSON.stringify(body);
  response.writeHead(status, { 'Content-Type': 'application/json', 'Content-Length': Buffer.byteLength(text), ...headers });
  response.end(text);
}

async function makeKeyPair(dir: string, subject: string): Promise<{ keyPath: string; certPath: string }> {
  const keyPath = join(dir, 'token-signing.key');
  const certPath = join(dir, 'token-signing.crt');
  await run('openssl', [
    'req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-sha256', '-days', '7',
    '-keyout', keyPath, '-out', certPath, '-subj', `/CN=${subject}`,
  ]);
  return { keyPath, certPath };
}

export async function startTokenServer(options: TokenServerOptions = {}): Promise<TokenServer> {
  const username = options.username ?? 'skiff';
  const password = options.password ?? 'skiff-secret';
  const service = options.service ?? 'skiff-test-registry';
  const issuer = options.issuer ?? 'skiff-test-token-issuer';
  const lifetime = options.expiresInSeconds ?? 300;
  const anonymous = options.anonymous ?? 'empty';

  const dir = await makeTempDir('skiff-token-server');
  const { keyPath, certPath } = await makeKeyPair(dir, issuer);
  const privateKey = await readFile(keyPath, 'utf8');
  const certDer = new X509Certificate(await readFile(certPath)).raw.toString('base64');

  const requests: TokenRequestRecord[] = [];
  const refreshTokens = new Map<string, string>();
  let issued = 0;

  const mintToken: TokenServer['mintToken'] = (subject, access, mintOptions = {}) => {
    const now = Math.floor(Date.now() / 1000);
    const header = { typ: 'JWT', alg: 'RS256', x5c: [certDer] };
    const claims = {
      iss: issuer,
      sub: subject,
      aud: service,
      exp: now + (mintOptions.expiresInSeconds ?? lifetime),
      nbf: mintOptions.notBefore ?? now - 1,
      iat: now,
      jti: randomBytes(12).toString('hex'),
      access,
    };
    const signingInput = `${base64url(JSON.stringify(header))}.${base64url(JSON.stringify(claims))}`;
    const signature = sign('sha256', Buffer.from(signingInput), privateKey);
    return `${signingInput}.${base64url(signature)}`;
  };

  const grantFor = (subject: string | undefined, requested: ResourceActions[]): ResourceActions[] =>
    requested.map((resource) => {
      let actions: string[];
      if (subject === undefined) actions = anonymous === 'pull' ? resource.actions.filter((a) => a === 'pull') : [];
      else actions = options.grant ? options.grant(subject, resource) : resource.actions;
      return { ...resource, actions };
    });

  const issue = (response: ServerResponse, subject: string | undefined, scopes: string[], refresh: boolean): ResourceActions[] => {
    const access = grantFor(subject, parseScopes(scopes));
    const token = mintToken(subject ?? '', access);
    issued += 1;
    const body: Record<string, unknown> = {
      token,
      access_token: token,
      expires_in: lifetime,
      issued_at: new Date().toISOString(),
    };
    if (scopes.length > 0) body.scope = scopes.join(' ');
    if (refresh && subject !== undefined) {
      const refreshToken = randomBytes(24).toString('hex');
      refreshTokens.set(refreshToken, subject);
      body.refresh_token = refreshToken;
    }
    sendJson(response, 200, body);
    return access;
  };

  const unauthorized = (response: ServerResponse): void =>
    sendJson(response, 401, { error: 'invalid_grant', details: 'authentication failed' }, {
      'WWW-Authenticate': `Basic realm="${issuer}"`,
    });

  const handleGet = (request: IncomingMessage, response: ServerResponse, url: URL): TokenRequestRecord => {
    const scopes = url.searchParams.getAll('scope');
    const credentials = basicCredentials(request.headers.authorization);
    const record: TokenRequestRecord = {
      method: 'GET',
      grantType: credentials ? 'basic' : 'anonymous',
      subject: credentials?.username,
      scopes,
      status: 200,
      access: [],
    };
    if (credentials === undefined) {
      if (anonymous === 'deny') {
        unauthorized(response);
        record.status = 401;
      } else {
        record.access = issue(response, undefined, scopes, false);
      }
      return record;
    }
    if (credentials.username !== username || credentials.password !== password) {
      unauthorized(response);
      record.status = 401;
      return record;
    }
    record.access = issue(response, username, scopes, url.searchParams.get('offline_token') === 'true');
    return record;
  };

  const handlePost = async (request: IncomingMessage, response: ServerResponse): Promise<TokenRequestRecord> => {
    const form = new URLSearchParams(await readBody(request));
    const grantType = form.get('grant_type');
    const scopes = form.getAll('scope');
    const record: TokenRequestRecord = { method: 'POST', grantType: 'password', subject: undefined, scopes, status: 200, access: [] };
    if (grantType === 'password') {
      if (form.get('username') !== username || form.get('password') !== password) {
        unauthorized(response);
        record.status = 401;
        return record;
      }
      record.subject = username;
    } else if (grantType === 'refresh_token') {
      record.grantType = 'refresh_token';
      const subject = refreshTokens.get(form.get('refresh_token') ?? '');
      if (subject === undefined) {
        unauthorized(response);
        record.status = 401;
        return record;
      }
      record.subject = subject;
    } else {
      sendJson(response, 400, { error: 'unsupported_grant_type' });
      record.status = 400;
      return record;
    }
    record.access = issue(response, record.subject, scopes, true);
    return record;
  };

  const server = createServer((request, response) => {
    const url = new URL(request.url ?? '/', 'http://127.0.0.1');
    if (url.pathname !== '/token') {
      sendJson(response, 404, { error: 'not found' });
      return;
    }
    const handled =
      request.method === 'GET'
        ? Promise.resolve(handleGet(request, response, url))
        : request.method === 'POST'
          ? handlePost(request, response)
          : Promise.resolve(undefined);
    handled
      .then((record) => {
        if (record) requests.push(record);
        else sendJson(response, 405, { error: 'method not allowed' });
      })
      .catch((error: unknown) => {
        if (!response.headersSent) sendJson(response, 500, { error: String(error) });
      });
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', resolve);
  });
  const { port } = server.address() as AddressInfo;
  const url = `http://127.0.0.1:${port}`;

  return {
    url,
    realm: `${url}/token`,
    service,
    issuer,
    certPath,
    keyPath,
    get issued() {
      return issued;
    },
    requests,
    resetCounters() {
      issued = 0;
      requests.length = 0;
    },
    registryAuth: () => ({ realm: `${url}/token`, service, issuer, rootCertBundle: certPath }),
    mintToken,
    async stop() {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
      await removeDir(dir);
    },
  };
}
