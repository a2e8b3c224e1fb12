import { request as httpRequest, type IncomingMessage } from 'node:http';

/** Where a request goes: a path on a daemon's unix socket, or a URL. */
export type HttpTarget = { socketPath: string; path: string } | { url: string };

export interface HttpCallOptions {
  method: 'GET' | 'PUT' | 'POST' | 'DELETE';
  /** Sent as JSON. */
  body?: unknown;
  timeoutMs: number;
  /** The error a request without an answer in time fails with (default: "no answer within <timeoutMs> ms"). */
  timeoutMessage?: string;
}

export interface HttpAnswer {
  status: number;
  body: Buffer;
}

/**
 * One request with node's own http client (no agent, so no connection outlives it), how the
 * services call each other's internal sockets. It rejects with the socket's error (an errno
 * error: ENOENT when nothing is at the socket's path, ECONNREFUSED when nobody listens there) or
 * with the timeout; any answer, whatever its status, resolves. Not fetch: fetch parses HTTP with
 * WebAssembly, which the CLI and supervisor run without.
 */
export function httpCall(target: HttpTarget, o: HttpCallOptions): Promise<HttpAnswer> {
  return new Promise((resolve, reject) => {
    const payload = o.body === undefined ? undefined : JSON.stringify(o.body);
    const headers: Record<string, string | number> = payload === undefined ? {} : { 'content-type': 'application/json', 'content-length': Buffer.byteLength(payload) };
    const options = { method: o.method, headers, agent: false, timeout: o.timeoutMs } as const;
    const onResponse = (res: IncomingMessage): void => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body: Buffer.concat(chunks) }));
      res.on('error', reject);
    };
    const req = 'url' in target ? httpRequest(target.url, options, onResponse) : httpRequest({ ...options, socketPath: target.socketPath, path: target.path }, onResponse);
    req.on('timeout', () => req.destroy(new Error(o.timeoutMessage ?? `no answer within ${o.timeoutMs} ms`)));
    req.on('error', reject);
    req.end(payload);
  });
}

/**
 * Whether a failed call found no daemon at the socket: no socket at its path (ENOENT, the daemon
 * is not running) or nobody listening on it (ECONNREFUSED, one killed and not restarted yet).
 */
export function nobodyListens(err: unknown): boolean {
  const code = (err as NodeJS.ErrnoException | undefined)?.code;
  return code === 'ENOENT' || code === 'ECONNREFUSED';
}

/** An answer's JSON body, or undefined when it has none or it is not JSON. */
export function jsonBody<T>(answer: HttpAnswer): Partial<T> | undefined {
  try {
    return JSON.parse(answer.body.toString('utf8')) as Partial<T>;
  } catch {
    return undefined;
  }
}
