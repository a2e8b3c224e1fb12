import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { bindPrivateSocket, ContractViolation, matchLogsRoute, parseTrackContainerRequest, UnsafeLogPath, type ErrorAnswer, type Logger } from '@skiff/common/core';
import { BarrierTimeout, NotReady, UnknownContainer, type LogEngine } from './log-engine.js';

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
  const answer: ErrorAnswer = { message };
  if (err instanceof ContractViolation) return send(res, 400, answer);
  if (err instanceof UnsafeLogPath) return send(res, 422, answer);
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
  const route = matchLogsRoute(req.method ?? '', url);
  if (route === undefined) return send(res, 404, { message: `no such route: ${req.method} ${url}` });
  if (route === 'method') return send(res, 405, { message: `${req.method} is not allowed on ${url}` });
  switch (route.call) {
    case 'status':
      return send(res, 200, engine.status());
    case 'track': {
      let body;
      try {
        body = parseTrackContainerRequest(await readJson(req));
      } catch (err) {
        return send(res, 400, { message: (err as Error).message });
      }
      return engine.track(route.containerId, body.logPath, { readBack: body.readBack === true }).then(() => send(res, 204), (err: unknown) => fail(res, err));
    }
    case 'forget':
      await engine.forget(route.containerId).catch((err: Error) => log.warn({ container: route.containerId, err: err.message }, 'forgetting a container failed'));
      return send(res, 204);
    case 'flush':
    case 'reopen':
      return (route.call === 'flush' ? engine.flush(route.containerId) : engine.reopen(route.containerId)).then(() => send(res, 204), (err: unknown) => fail(res, err));
  }
}

/**
 * runtime-svc's door to logs-svc, root only: the logs-control contract of @skiff/common (plain
 * node:http: five routes do not need a framework, and logs-svc is meant to stay small).
 */
export async function startInternalServer(options: { socket: string; engine: LogEngine; log: Logger }): Promise<Server> {
  const server = createServer((req, res) => {
    route(options.engine, options.log, req, res).catch((err: unknown) => {
      options.log.error({ err: (err as Error).message, url: req.url }, 'internal request failed');
      if (!res.headersSent) fail(res, err);
    });
  });
  await bindPrivateSocket(
    options.socket,
    (path) =>
      new Promise<void>((resolve, reject) => {
        server.once('error', reject);
        server.listen(path, () => {
          server.off('error', reject);
          resolve();
        });
      }),
  );
  return server;
}

export function closeServer(server: Server): Promise<void> {
  return new Promise((resolve) => {
    server.close(() => resolve());
    server.closeAllConnections();
  });
}
