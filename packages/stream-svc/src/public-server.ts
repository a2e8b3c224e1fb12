import type { IncomingMessage } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Duplex } from 'node:stream';
import Fastify, { type FastifyInstance, type FastifyReply, type FastifyRequest } from 'fastify';
import type { WebSocket, WebSocketServer } from 'ws';
import { errorMessage, type Logger, type StreamRequest } from '@skiff/common/core';
import { runAttach } from './attach-runner.js';
import { runExec } from './exec-runner.js';
import { servePortForward, PORT_FORWARD_PROTOCOLS, SPDY_TUNNEL_PROTOCOL } from './port-forward.js';
import type { StreamSession } from './session.js';
import { INITIAL_WINDOW, SpdyConnection, type ByteTransport, type SpdyConnectionEvents } from './spdy/connection.js';
import { bindSocket, bindWebSocket } from './spdy/transports.js';
import {
  acceptUpgrade,
  hasUpgradeHeaders,
  isSpdyUpgrade,
  negotiate,
  offeredProtocols,
  refuseProtocols,
  SPDY_PORT_FORWARD_PROTOCOLS,
  SPDY_REMOTE_COMMAND_PROTOCOLS,
} from './spdy/upgrade.js';
import { spdyPortForward } from './spdy-port-forward.js';
import { SpdyStreamSession } from './spdy-session.js';
import type { TokenStore } from './token-store.js';
import { chooseProtocol, REMOTE_COMMAND_PROTOCOLS, WebSocketSession } from './websocket-session.js';

export const HEALTH_PATH = '/healthz';
/** How long stopping waits for exec and attach runs to clean up after their clients are cut off. */
const SHUTDOWN_GRACE_MS = 5000;
/**
 * Largest WebSocket message taken (ws closes the connection with 1009 past it); clients send
 * stdin, resizes and forwarded bytes in far smaller pieces.
 */
export const MAX_WEBSOCKET_MESSAGE = 4 * 1024 * 1024;
const STREAM_PATH = /^\/(exec|attach|portforward)\/([A-Za-z0-9_-]+)\/?$/;

export interface PublicServerOptions {
  address: string;
  port: number;
  tokens: TokenStore;
  idleTimeoutMs: number;
  /** Scratch space for exec process files. */
  scratchDir: string;
  /** The conmon that runs execs with a terminal (the runtime comes with each request). */
  conmon: string;
  limits: StreamLimits;
  log: Logger;
  /** Told of each session that starts: its transport and its kind. */
  onSession?: (transport: 'spdy' | 'websocket', kind: StreamRequest['kind']) => void;
}

export interface StreamLimits {
  /** Exec, attach and port-forward connections open at once. */
  maxConnections: number;
  /** Streams open at once in one SPDY session. */
  maxStreamsPerSession: number;
  /** Forwarded connections at once in one port-forward session. */
  maxPortForwardConnections: number;
}

/** Connections beyond the streaming ones that may be open (health checks, requests being refused). */
const SPARE_CONNECTIONS = 64;

function refuse(socket: Duplex, code: number, reason: string, message: string): void {
  socket.end(`HTTP/1.1 ${code} ${reason}\r\nContent-Type: text/plain\r\nContent-Length: ${Buffer.byteLength(message)}\r\nConnection: close\r\n\r\n${message}`);
}

/** The streaming server clients connect to: health check, and WebSocket or SPDY upgrades on the stream URLs. */
export async function startPublicServer(options: PublicServerOptions): Promise<{ app: FastifyInstance; baseUrl: string }> {
  const { tokens } = options;
  const app = Fastify({ logger: false });
  app.get(HEALTH_PATH, async () => 'ok');
  const notUpgraded = async (_req: FastifyRequest, reply: FastifyReply) =>
    reply.code(400).send({ message: 'this URL must be opened as a WebSocket (subprotocol v5.channel.k8s.io or v4.channel.k8s.io) or upgraded to SPDY/3.1' });
  for (const kind of ['exec', 'attach', 'portforward']) {
    app.get(`/${kind}/:token`, notUpgraded);
    app.post(`/${kind}/:token`, notUpgraded);
  }

  // ws (~6 MiB) is loaded with the first WebSocket stream: a node whose clients speak SPDY never needs it.
  let webSocketServers: Promise<{ remoteCommand: WebSocketServer; portForward: WebSocketServer }> | undefined;
  const loadWebSocketServers = (): NonNullable<typeof webSocketServers> =>
    (webSocketServers ??= import('ws').then(({ WebSocketServer: Server }) => ({
      remoteCommand: new Server({ noServer: true, maxPayload: MAX_WEBSOCKET_MESSAGE, handleProtocols: (offered) => chooseProtocol(offered, REMOTE_COMMAND_PROTOCOLS) }),
      portForward: new Server({
        noServer: true,
        maxPayload: MAX_WEBSOCKET_MESSAGE,
        handleProtocols: (offered) => chooseProtocol(new Set([...offered].map((p) => (p === SPDY_TUNNEL_ALIAS ? SPDY_TUNNEL_PROTOCOL : p))), PORT_FORWARD_PROTOCOLS),
      }),
    })));
  const spdyConnections = new Set<SpdyConnection>();
  const track = (connection: SpdyConnection): void => {
    spdyConnections.add(connection);
  };
  const runs = new Set<Promise<void>>();
  const context: StreamContext = { ...options, track, untrack: (c) => spdyConnections.delete(c), runs };

  // Past this the server closes new connections at once: a flood of idle ones cannot pile up.
  app.server.maxConnections = options.limits.maxConnections + SPARE_CONNECTIONS;
  let streaming = 0;
  app.server.on('upgrade', (req: IncomingMessage, socket: Duplex, head: Buffer) => {
    socket.on('error', () => undefined);
    const match = STREAM_PATH.exec(new URL(req.url ?? '/', 'http://x').pathname);
    if (!match || (req.method !== 'GET' && req.method !== 'POST')) return refuse(socket, 404, 'Not Found', 'not a streaming URL\n');
    // Refused before the token is taken: the URL stays good for a retry.
    if (streaming >= options.limits.maxConnections) {
      options.log.warn({ open: streaming }, 'streaming connection refused: stream.max_connections reached');
      return refuse(socket, 503, 'Service Unavailable', `stream-svc has ${streaming} streaming connections open, its limit (stream.max_connections); retry later\n`);
    }
    streaming++;
    socket.once('close', () => streaming--);
    // The token is used up here, whatever protocol follows.
    const request = tokens.take(match[2]!);
    if (!request || request.kind !== match[1]) return refuse(socket, 404, 'Not Found', 'unknown or expired streaming token (tokens are single use and valid for one minute)\n');
    if (isSpdyUpgrade(req)) return startSpdy(request, req, socket, head, context);
    if ((req.headers.upgrade ?? '').toLowerCase() !== 'websocket') {
      return refuse(socket, 400, 'Bad Request', 'unknown upgrade: open stream URLs as a WebSocket or with Upgrade: SPDY/3.1\n');
    }
    if (request.kind === 'portforward') aliasTunnelProtocol(req);
    // ws's server expects GET; clients may POST.
    if (req.method === 'POST') req.method = 'GET';
    // An upgraded socket is not read until ws takes it: nothing the client sends meanwhile is lost.
    loadWebSocketServers().then(
      ({ remoteCommand, portForward }) => {
        const wss = request.kind === 'portforward' ? portForward : remoteCommand;
        wss.handleUpgrade(req, socket, head, (ws) => startWebSocketStream(request, ws, context, req.url));
      },
      (err: unknown) => {
        options.log.error({ err: errorMessage(err) }, 'cannot load the WebSocket server');
        refuse(socket, 500, 'Internal Server Error', 'stream-svc cannot serve WebSocket streams\n');
      },
    );
  });

  // Before the server closes: it waits for every open connection, upgraded ones included.
  app.addHook('preClose', async () => {
    if (webSocketServers) {
      const { remoteCommand, portForward } = await webSocketServers;
      for (const ws of [...remoteCommand.clients, ...portForward.clients]) ws.terminate();
    }
    for (const connection of [...spdyConnections]) connection.destroy('stream-svc is stopping');
    // Runners kill their processes once they see the client gone; let them, within reason.
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([Promise.allSettled([...runs]), new Promise((resolve) => (timer = setTimeout(resolve, SHUTDOWN_GRACE_MS)))]);
    clearTimeout(timer);
  });
  await app.listen({ host: options.address, port: options.port });
  const addr = app.server.address() as AddressInfo;
  const host = addr.family === 'IPv6' ? `[${addr.address}]` : addr.address;
  return { app, baseUrl: `http://${host}:${addr.port}` };
}

/**
 * `SPDY/3.1+portforward.k8s.io` (what client-go offers) holds a `/`, which is not a token
 * character, and ws refuses such a Sec-WebSocket-Protocol. It is renamed for ws's parser and
 * chosen under its real name, which is what the answer carries.
 */
const SPDY_TUNNEL_ALIAS = 'spdy-3.1+portforward.k8s.io';
function aliasTunnelProtocol(req: IncomingMessage): void {
  const offered = req.headers['sec-websocket-protocol'];
  if (offered?.includes(SPDY_TUNNEL_PROTOCOL)) {
    req.headers['sec-websocket-protocol'] = offered
      .split(',')
      .map((p) => (p.trim() === SPDY_TUNNEL_PROTOCOL ? SPDY_TUNNEL_ALIAS : p.trim()))
      .join(', ');
  }
}

interface StreamContext extends PublicServerOptions {
  track(connection: SpdyConnection): void;
  untrack(connection: SpdyConnection): void;
  /** Exec and attach runs still going. */
  runs: Set<Promise<void>>;
}

/** A SPDY connection whose end is also reported to the server's bookkeeping. */
function spdyConnection(transport: ByteTransport, events: SpdyConnectionEvents, context: StreamContext): SpdyConnection {
  const connection: SpdyConnection = new SpdyConnection(
    transport,
    {
      onStream: (stream) => events.onStream(stream),
      onClose: (reason) => {
        context.untrack(connection);
        events.onClose(reason);
      },
    },
    'server',
    INITIAL_WINDOW,
    context.limits.maxStreamsPerSession,
  );
  context.track(connection);
  return connection;
}

function startSpdy(request: StreamRequest, req: IncomingMessage, socket: Duplex, head: Buffer, context: StreamContext): void {
  const supported = request.kind === 'portforward' ? SPDY_PORT_FORWARD_PROTOCOLS : SPDY_REMOTE_COMMAND_PROTOCOLS;
  const negotiation = negotiate(offeredProtocols(req), supported);
  if (!negotiation.ok) return refuseProtocols(socket, negotiation.offered, supported);
  if (!hasUpgradeHeaders(req)) return refuse(socket, 400, 'Bad Request', 'unable to upgrade: missing upgrade headers in request (Connection: Upgrade, Upgrade: SPDY/3.1)\n');
  acceptUpgrade(socket, negotiation.protocol);
  context.onSession?.('spdy', request.kind);

  if (request.kind === 'portforward') {
    const events = spdyPortForward(request, context.log, context.limits.maxPortForwardConnections);
    bindSocket(socket, head, (transport) => spdyConnection(transport, events, context), context.idleTimeoutMs);
    context.log.info({ sandbox: request.podSandboxId, protocol: 'spdy' }, 'port-forward started');
    return;
  }
  const protocol = negotiation.protocol ?? 'channel.k8s.io';
  const session = new SpdyStreamSession(protocol, request.kind === 'exec' ? request.cmd : [], request);
  const connection = bindSocket(
    socket,
    head,
    (transport) => spdyConnection(transport, { onStream: (stream) => session.addStream(stream), onClose: () => session.connectionClosed() }, context),
    context.idleTimeoutMs,
  );
  session.bind(connection);
  void session.waitForStreams().then((ready) => {
    if (!ready) {
      connection.destroy('timed out waiting for client to create streams');
      return;
    }
    session.closeUnusedStdin();
    runStream(request, session!, context);
  });
}

function startWebSocketStream(request: StreamRequest, ws: WebSocket, context: StreamContext, url: string | undefined): void {
  const { log } = context;
  context.onSession?.('websocket', request.kind);
  if (request.kind === 'portforward') {
    if (ws.protocol === SPDY_TUNNEL_PROTOCOL) {
      const events = spdyPortForward(request, log, context.limits.maxPortForwardConnections);
      bindWebSocket(ws, (transport) => spdyConnection(transport, events, context), context.idleTimeoutMs);
      log.info({ sandbox: request.podSandboxId, protocol: SPDY_TUNNEL_PROTOCOL }, 'port-forward started');
      return;
    }
    servePortForward(request, ws, context.idleTimeoutMs, context.limits.maxPortForwardConnections, log, url);
    return;
  }
  const protocol = ws.protocol || 'channel.k8s.io';
  const cmd = request.kind === 'exec' ? request.cmd : [];
  runStream(request, new WebSocketSession(ws, protocol, cmd, context.idleTimeoutMs), context);
}

/** Exec or attach, the same over either protocol. */
function runStream(request: Exclude<StreamRequest, { kind: 'portforward' }>, session: StreamSession, context: StreamContext): void {
  const { log } = context;
  const run = request.kind === 'exec' ? runExec(request, context.conmon, session, context.scratchDir, log) : runAttach(request, session, log);
  const tracked = run
    .catch((err: unknown) => {
      log.error({ err: (err as Error).message, container: request.containerId, kind: request.kind }, `${request.kind} failed`);
      session.finish({ error: `${request.kind} in container ${request.containerId} failed: ${(err as Error).message}` });
    })
    .finally(() => context.runs.delete(tracked));
  context.runs.add(tracked);
}
