import type { IncomingMessage } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Duplex } from 'node:stream';
import Fastify, { type FastifyInstance } from 'fastify';
import { WebSocketServer } from 'ws';
import type { Logger } from '@skiff/common';
import { runExec } from './exec-runner.js';
import { servePortForward, PORT_FORWARD_PROTOCOLS } from './port-forward.js';
import type { StreamRequest } from './requests.js';
import type { TokenStore } from './token-store.js';
import { chooseProtocol, REMOTE_COMMAND_PROTOCOLS, WebSocketSession } from './websocket-session.js';

export const HEALTH_PATH = '/healthz';
const STREAM_PATH = /^\/(exec|attach|portforward)\/([A-Za-z0-9_-]+)\/?$/;

export interface PublicServerOptions {
  address: string;
  port: number;
  tokens: TokenStore;
  idleTimeoutMs: number;
  /** Scratch space for exec process files. */
  scratchDir: string;
  log: Logger;
}

function refuse(socket: Duplex, code: number, reason: string, message: string): void {
  socket.end(`HTTP/1.1 ${code} ${reason}\r\nContent-Type: text/plain\r\nContent-Length: ${Buffer.byteLength(message)}\r\nConnection: close\r\n\r\n${message}`);
}

/** The streaming server clients connect to: health check, and upgrades on the stream URLs. */
export async function startPublicServer(options: PublicServerOptions): Promise<{ app: FastifyInstance; baseUrl: string }> {
  const { tokens } = options;
  const app = Fastify({ logger: false });
  app.get(HEALTH_PATH, async () => 'ok');
  const notUpgraded = async (_req: unknown, reply: { code(n: number): { send(v: unknown): unknown } }) =>
    reply.code(400).send({ message: 'this URL must be opened as a WebSocket (subprotocol v5.channel.k8s.io or v4.channel.k8s.io)' });
  for (const kind of ['exec', 'attach', 'portforward']) {
    app.get(`/${kind}/:token`, notUpgraded);
    app.post(`/${kind}/:token`, notUpgraded);
  }

  const remoteCommand = new WebSocketServer({ noServer: true, handleProtocols: (offered) => chooseProtocol(offered, REMOTE_COMMAND_PROTOCOLS) });
  const portForward = new WebSocketServer({ noServer: true, handleProtocols: (offered) => chooseProtocol(offered, PORT_FORWARD_PROTOCOLS) });

  app.server.on('upgrade', (req: IncomingMessage, socket: Duplex, head: Buffer) => {
    socket.on('error', () => undefined);
    const match = STREAM_PATH.exec(new URL(req.url ?? '/', 'http://x').pathname);
    if (!match || (req.method !== 'GET' && req.method !== 'POST')) return refuse(socket, 404, 'Not Found', 'not a streaming URL\n');
    const request = tokens.take(match[2]!);
    if (!request || request.kind !== match[1]) return refuse(socket, 404, 'Not Found', 'unknown or expired streaming token (tokens are single use and valid for one minute)\n');
    if ((req.headers.upgrade ?? '').toLowerCase() !== 'websocket') {
      return refuse(socket, 400, 'Bad Request', 'only WebSocket streaming is supported by this runtime; SPDY is not\n');
    }
    const wss = request.kind === 'portforward' ? portForward : remoteCommand;
    // ws's server expects GET; kubectl uses POST for exec with SPDY only, but accept both.
    if (req.method === 'POST') req.method = 'GET';
    wss.handleUpgrade(req, socket, head, (ws) => startStream(request, ws, options, req.url));
  });

  // Before the server closes: it waits for every open connection, upgraded ones included.
  app.addHook('preClose', async () => {
    for (const ws of [...remoteCommand.clients, ...portForward.clients]) ws.terminate();
  });
  await app.listen({ host: options.address, port: options.port });
  const addr = app.server.address() as AddressInfo;
  const host = addr.family === 'IPv6' ? `[${addr.address}]` : addr.address;
  return { app, baseUrl: `http://${host}:${addr.port}` };
}

function startStream(request: StreamRequest, ws: import('ws').WebSocket, options: PublicServerOptions, url: string | undefined): void {
  const { log } = options;
  if (request.kind === 'portforward') {
    servePortForward(request, ws, options.idleTimeoutMs, log, url);
    return;
  }
  const protocol = ws.protocol || 'channel.k8s.io';
  const cmd = request.kind === 'exec' ? request.cmd : [];
  const session = new WebSocketSession(ws, protocol, cmd, options.idleTimeoutMs);
  if (request.kind === 'exec') {
    runExec(request, session, options.scratchDir, log).catch((err: unknown) => {
      log.error({ err: (err as Error).message, container: request.containerId }, 'exec failed');
      session.finish({ error: `exec in container ${request.containerId} failed: ${(err as Error).message}` });
    });
  } else {
    session.finish({ error: 'Attach is not supported by this runtime yet' });
  }
}
