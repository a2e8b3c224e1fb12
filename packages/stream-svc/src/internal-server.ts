import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { bindPrivateSocket, ContractViolation, parseStreamRequest, STREAM_REGISTRATION_PATH, type ErrorAnswer, type Logger, type StreamRegistered, type StreamRequest } from '@skiff/common/core';
import { TokenStore, TooManyTokens } from './token-store.js';

const MAX_BODY = 1024 * 1024;

function send(res: ServerResponse, code: number, body: StreamRegistered | ErrorAnswer): void {
  const text = JSON.stringify(body);
  res.writeHead(code, { 'content-type': 'application/json; charset=utf-8', 'content-length': Buffer.byteLength(text) }).end(text);
}

class BadBody extends Error {}

async function readJson(req: IncomingMessage): Promise<unknown> {
  const chunks: Buffer[] = [];
  let length = 0;
  for await (const chunk of req as AsyncIterable<Buffer>) {
    length += chunk.length;
    if (length > MAX_BODY) throw new BadBody(`the request body is over ${MAX_BODY} bytes`);
    chunks.push(chunk);
  }
  try {
    return JSON.parse(Buffer.concat(chunks).toString('utf8')) as unknown;
  } catch (err) {
    throw new BadBody(`the request body is not JSON: ${(err as Error).message}`);
  }
}

async function register(req: IncomingMessage, res: ServerResponse, tokens: TokenStore, baseUrl: () => string): Promise<void> {
  const path = (req.url ?? '').split('?')[0];
  if (path !== STREAM_REGISTRATION_PATH) return send(res, 404, { message: `no such route: ${req.method} ${path}` });
  if (req.method !== 'POST') return send(res, 405, { message: `${req.method} is not allowed on ${path}` });
  let request: StreamRequest;
  try {
    request = parseStreamRequest(await readJson(req));
  } catch (err) {
    if (err instanceof ContractViolation || err instanceof BadBody) return send(res, 400, { message: err.message });
    throw err;
  }
  try {
    const token = tokens.issue(request);
    return send(res, 201, { url: `${baseUrl()}/${request.kind}/${token}` });
  } catch (err) {
    if (err instanceof TooManyTokens) return send(res, 429, { message: err.message });
    throw err;
  }
}

/**
 * The runtime service's door (the stream-registration contract of @skiff/common): a resolved
 * request answers 201 {url}; 400 naming the field that breaks the contract, 429 when too many are
 * outstanding. Root only. Plain node:http: one route needs no framework.
 */
export async function startInternalServer(options: { socket: string; tokens: TokenStore; baseUrl: () => string; log: Logger }): Promise<{ close(): Promise<void> }> {
  const server: Server = createServer((req, res) => {
    register(req, res, options.tokens, options.baseUrl).catch((err: unknown) => {
      options.log.error({ err: (err as Error).message }, 'stream registration failed');
      if (!res.headersSent) send(res, 500, { message: (err as Error).message });
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
  options.log.debug({ socket: options.socket }, 'internal socket ready');
  return {
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeIdleConnections();
      }),
  };
}
