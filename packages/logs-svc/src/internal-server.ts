import { promises as fs } from 'node:fs';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { isAbsolute } from 'node:path';
import type { Logger } from '@skiff/common';
import { BarrierTimeout, NotReady, UnknownContainer, type LogEngine } from './log-engine.js';

const CONTAINER_ROUTE = /^\/v1\/containers\/([0-9a-f]{8,128})(?:\/(flush|reopen))?$/;
const MAX_BODY = 64 * 1024;

function send(res: ServerResponse, code: number, body?: unknown): void {
  if (body === undefined) {
    res.writeHead(code).end();
    return;
  }
  const text = JSON.stringify(body);
  res.writeHead(code, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) }).end(text);
}

function fail(res: ServerResponse, err: unknown): void {
  const message = err instanceof Error ? err.message : String(err);
  if (err instanceof UnknownContainer) return send(res, 404, { message });
  if (err instanceof NotReady) return send(res, 503, { message });
  if (err instanceof BarrierTimeout) return send(res, 504, { message });
  send(res, 500, { message });
}

async function readJson(req: IncomingMessage): Promise<unknown> {
  const chunks: Buffer[] = [];
  let length = 0;
  for await (const chunk of req as AsyncIterable<Buffer>) {
    length += chunk.length;
    if (length > MAX_BODY) throw new Error('request body too large');
    chunks.push(chunk);
  }
  return length === 0 ? null : (JSON.parse(Buffer.concat(chunks).toString('utf8')) as unknown);
}

async function route(engine: LogEngine, log: Logger, req: IncomingMessage, res: ServerResponse): Promise<void> {
  const url = req.url ?? '';
  if (url === '/v1/status' && req.method === 'GET') return send(res, 200, engine.status());
  const m = CONTAINER_ROUTE.exec(url);
  if (!m) return send(res, 404, { message: `no such route: ${req.method} ${url}` });
  const [, id, action] = m as unknown as [string, string, string | undefined];
  if (!action && req.method === 'PUT') {
    let logPath: unknown;
    try {
      logPath = ((await readJson(req)) as { logPath?: unknown } | null)?.logPath;
    } catch (err) {
      return send(res, 400, { message: (err as Error).message });
    }
    if (typeof logPath !== 'string' || !isAbsolute(logPath)) return send(res, 400, { message: 'an absolute logPath is required' });
    return engine.track(id, logPath).then(() => send(res, 204), (err: unknown) => fail(res, err));
  }
  if (!action && req.method === 'DELETE') {
    await engine.forget(id).catch((err: Error) => log.warn({ container: id, err: err.message }, 'forgetting a container failed'));
    return send(res, 204);
  }
  if (action && req.method === 'POST') {
    return (action === 'flush' ? engine.flush(id) : engine.reopen(id)).then(() => send(res, 204), (err: unknown) => fail(res, err));
  }
  send(res, 405, { message: `${req.method} is not allowed on ${url}` });
}

/**
 * runtime-svc's door to logs-svc, root only (plain node:http: five routes do not need a framework,
 * and logs-svc is meant to stay small):
 *   PUT    /v1/containers/:id          {logPath}  follow a container (its log file is created at once)
 *   DELETE /v1/containers/:id                     forget it
 *   POST   /v1/containers/:id/flush              answers once every line it sent is in its file
 *   POST   /v1/containers/:id/reopen             switch to a new file at its log path (after a rename)
 *   GET    /v1/status                             readiness, cursor, journald rate-limit notices
 */
export async function startInternalServer(options: { socket: string; engine: LogEngine; log: Logger }): Promise<Server> {
  const server = createServer((req, res) => {
    route(options.engine, options.log, req, res).catch((err: unknown) => {
      options.log.error({ err: (err as Error).message, url: req.url }, 'internal request failed');
      if (!res.headersSent) fail(res, err);
    });
  });
  await fs.rm(options.socket, { force: true });
  const oldMask = process.umask(0o177);
  try {
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(options.socket, () => resolve());
    });
  } finally {
    process.umask(oldMask);
  }
  await fs.chmod(options.socket, 0o600);
  return server;
}

export function closeServer(server: Server): Promise<void> {
  return new Promise((resolve) => {
    server.close(() => resolve());
    server.closeAllConnections();
  });
}
