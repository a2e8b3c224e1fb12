import { createHash } from 'node:crypto';
import http from 'node:http';
import https from 'node:https';
import type { Readable } from 'node:stream';
import { RegistryError } from './errors.js';
import { CERTS_DIR, SYSTEM_CA_BUNDLE, loadTlsMaterial, type TlsSources } from './tls-config.js';

export interface TransportOptions {
  userAgent: string;
  tls?: Partial<TlsSources>;
  /** From request start until the TCP connection is up. */
  connectTimeoutMs?: number;
  /** From request start until the response headers arrive. */
  responseTimeoutMs?: number;
  /** Longest silence on the connection while a response body is read. */
  idleTimeoutMs?: number;
  maxRedirects?: number;
}

export interface TransportRequest {
  url: URL;
  method?: 'GET' | 'HEAD' | 'POST';
  headers?: Record<string, string>;
  body?: string | Buffer;
  signal?: AbortSignal;
  /** TLS without certificate verification (registries marked insecure). Not carried across a redirect to another host. */
  skipVerify?: boolean;
}

export interface TransportResponse {
  status: number;
  headers: http.IncomingHttpHeaders;
  body: Readable;
  /** Where the response came from, after redirects. */
  url: URL;
}

interface CachedAgent {
  agent: https.Agent;
  fingerprint: string;
  loadedAt: number;
}

const TLS_RELOAD_MS = 30_000;
// Kept-alive connections idle this long are closed.
const FREE_SOCKET_TIMEOUT_MS = 30_000;
const DEFAULTS = { connectTimeoutMs: 15_000, responseTimeoutMs: 60_000, idleTimeoutMs: 60_000, maxRedirects: 10 };
const REDIRECT_STATUSES = new Set([301, 302, 303, 307, 308]);
const UNTRUSTED_CERT_CODES = new Set([
  'UNABLE_TO_VERIFY_LEAF_SIGNATURE',
  'UNABLE_TO_GET_ISSUER_CERT',
  'UNABLE_TO_GET_ISSUER_CERT_LOCALLY',
  'SELF_SIGNED_CERT_IN_CHAIN',
  'DEPTH_ZERO_SELF_SIGNED_CERT',
  'CERT_HAS_EXPIRED',
  'CERT_NOT_YET_VALID',
  'ERR_TLS_CERT_ALTNAME_INVALID',
  'CERT_UNTRUSTED',
]);

export function abortErrorOf(signal: AbortSignal): Error {
  return signal.reason instanceof Error ? signal.reason : new DOMException('the operation was aborted', 'AbortError');
}

export function isAbortError(err: unknown): boolean {
  return err instanceof Error && err.name === 'AbortError';
}

/** Sends HTTP(S) requests with per-host trust anchors, timeouts, cancellation and redirects. */
export class HttpTransport {
  private readonly agents = new Map<string, Promise<CachedAgent>>();
  private readonly httpAgent = new http.Agent({ keepAlive: true, maxSockets: 16, timeout: FREE_SOCKET_TIMEOUT_MS });
  private readonly opts: Required<Omit<TransportOptions, 'tls'>>;
  private readonly tlsSources: TlsSources;

  constructor(options: TransportOptions) {
    this.opts = { ...DEFAULTS, ...stripUndefined(options) } as Required<Omit<TransportOptions, 'tls'>>;
    this.tlsSources = { caBundlePath: options.tls?.caBundlePath ?? SYSTEM_CA_BUNDLE, certsDir: options.tls?.certsDir ?? CERTS_DIR };
  }

  /** A response that sends no bytes for this long fails; for requests made from now on. */
  setIdleTimeout(ms: number): void {
    this.opts.idleTimeoutMs = ms;
  }

  get certsDir(): string {
    return this.tlsSources.certsDir;
  }

  async request(req: TransportRequest): Promise<TransportResponse> {
    let url = req.url;
    let headers = { ...req.headers };
    let skipVerify = req.skipVerify ?? false;
    const method = req.method ?? 'GET';
    for (let hops = 0; ; hops++) {
      const res = await this.send(url, method, headers, req.body, req.signal, skipVerify);
      const location = res.headers.location;
      if (!REDIRECT_STATUSES.has(res.status) || location === undefined || method === 'POST') return res;
      res.body.resume();
      if (hops >= this.opts.maxRedirects) {
        throw new RegistryError('protocol', `${req.url.host} redirected more than ${this.opts.maxRedirects} times (last to ${location})`);
      }
      const next = new URL(location, url);
      if (next.protocol !== 'http:' && next.protocol !== 'https:') {
        throw new RegistryError('protocol', `${url.host} redirected to unsupported URL ${next.protocol}//${next.host}`);
      }
      // What TLS protected (the blob, the token in a signed URL) must not continue in clear text.
      if (url.protocol === 'https:' && next.protocol === 'http:') {
        throw new RegistryError(
          'insecure-redirect',
          `${url.host} redirected from HTTPS to plain HTTP (${next.protocol}//${next.host}${next.pathname}); refusing the downgrade, fix the registry or its storage redirect`,
        );
      }
      if (next.origin !== url.origin) {
        // Blob redirects go to storage with their own signed URLs: registry credentials stay behind.
        const { authorization: _dropped, ...rest } = headers;
        headers = rest;
        if (next.host !== url.host) skipVerify = false;
      }
      url = next;
    }
  }

  close(): void {
    this.httpAgent.destroy();
    for (const agent of this.agents.values()) void agent.then((a) => a.agent.destroy(), () => undefined);
    this.agents.clear();
  }

  /**
   * One keep-alive agent per host and verification mode. Trust material is re-read every
   * TLS_RELOAD_MS, so a CA an operator drops into certs.d counts without a restart.
   */
  private async agentFor(url: URL, skipVerify: boolean): Promise<http.Agent> {
    if (url.protocol === 'http:') return this.httpAgent;
    const key = `${url.host}|${skipVerify}`;
    const cached = this.agents.get(key);
    const current = cached ? await cached.catch(() => undefined) : undefined;
    if (current && Date.now() - current.loadedAt < TLS_RELOAD_MS) return current.agent;
    const loading = loadTlsMaterial(this.tlsSources, url.host).then((tls): CachedAgent => {
      const fingerprint = createHash('sha256').update(JSON.stringify(tls)).digest('hex');
      if (current && current.fingerprint === fingerprint) return { ...current, loadedAt: Date.now() };
      const agent = new https.Agent({ keepAlive: true, maxSockets: 16, timeout: FREE_SOCKET_TIMEOUT_MS, ...tls, rejectUnauthorized: !skipVerify });
      return { agent, fingerprint, loadedAt: Date.now() };
    });
    this.agents.set(key, loading);
    try {
      return (await loading).agent;
    } catch (err) {
      if (this.agents.get(key) === loading) this.agents.delete(key);
      throw err;
    }
  }

  private async send(
    url: URL,
    method: string,
    headers: Record<string, string>,
    body: string | Buffer | undefined,
    signal: AbortSignal | undefined,
    skipVerify: boolean,
  ): Promise<TransportResponse> {
    if (signal?.aborted) throw abortErrorOf(signal);
    let agent: http.Agent;
    try {
      agent = await this.agentFor(url, skipVerify);
    } catch (err) {
      throw new RegistryError('unreachable', `cannot set up TLS for ${url.host}: ${(err as Error).message}`, { cause: err });
    }
    const { connectTimeoutMs, responseTimeoutMs, idleTimeoutMs } = this.opts;
    return new Promise<TransportResponse>((resolve, reject) => {
      const module = url.protocol === 'https:' ? https : http;
      const req = module.request(url, { method, agent, headers: { 'user-agent': this.opts.userAgent, ...headers } });
      let response: http.IncomingMessage | undefined;

      const fail = (err: Error): void => {
        if (response) response.destroy(err);
        else req.destroy(err);
      };
      const connectTimer = setTimeout(
        () => fail(new RegistryError('unreachable', `cannot reach ${url.host}: no connection within ${connectTimeoutMs / 1000} s`)),
        connectTimeoutMs,
      );
      const responseTimer = setTimeout(
        () => fail(new RegistryError('unreachable', `${url.host} sent no response within ${responseTimeoutMs / 1000} s`)),
        responseTimeoutMs,
      );
      const onAbort = (): void => fail(abortErrorOf(signal!));
      signal?.addEventListener('abort', onAbort, { once: true });
      const cleanup = (): void => {
        clearTimeout(connectTimer);
        clearTimeout(responseTimer);
        signal?.removeEventListener('abort', onAbort);
      };

      req.on('socket', (socket) => {
        if (!socket.connecting) clearTimeout(connectTimer);
        else socket.once('connect', () => clearTimeout(connectTimer));
      });
      req.on('error', (err) => {
        cleanup();
        if (!response) reject(describeNetworkError(err, url, this.tlsSources.certsDir));
      });
      req.on('response', (res) => {
        response = res;
        clearTimeout(connectTimer);
        clearTimeout(responseTimer);
        req.setTimeout(idleTimeoutMs, () =>
          res.destroy(new RegistryError('unreachable', `${url.host} sent no data for ${idleTimeoutMs / 1000} s`)),
        );
        res.once('close', cleanup);
        resolve({ status: res.statusCode ?? 0, headers: res.headers, body: res, url });
      });
      req.end(body);
    });
  }
}

function stripUndefined<T extends object>(value: T): Partial<T> {
  return Object.fromEntries(Object.entries(value).filter(([, v]) => v !== undefined)) as Partial<T>;
}

/** Turns a socket or TLS failure into an 'unreachable' RegistryError that names the host and a way out. */
export function describeNetworkError(err: Error, url: URL, certsDir: string): Error {
  if (err instanceof RegistryError || isAbortError(err)) return err;
  const code = (err as NodeJS.ErrnoException).code ?? '';
  const host = url.host;
  let message: string;
  if (code === 'ENOTFOUND' || code === 'EAI_AGAIN' || code === 'EAI_NODATA') {
    message = `cannot resolve registry host ${url.hostname} (${code})`;
  } else if (code === 'ECONNREFUSED') {
    message = `connection to ${host} refused: nothing listens on ${url.protocol === 'https:' ? 'HTTPS' : 'HTTP'} port ${url.port || (url.protocol === 'https:' ? 443 : 80)}`;
  } else if (UNTRUSTED_CERT_CODES.has(code)) {
    message =
      `TLS certificate of ${host} is not trusted (${code}: ${err.message}); ` +
      `install the registry's CA as ${certsDir}/${host}/ca.crt, or mark it insecure in registries.conf`;
  } else if (code === 'EPROTO' || /wrong version number|packet length too long/i.test(err.message)) {
    message = `TLS handshake with ${host} failed (${err.message.trim()}); if it serves plain HTTP, mark it insecure in registries.conf`;
  } else {
    message = `cannot reach ${host}: ${err.message}${code && !err.message.includes(code) ? ` (${code})` : ''}`;
  }
  return new RegistryError('unreachable', message, { cause: err });
}
