import type { Socket } from 'node:net';
import type { Duplex } from 'node:stream';
import type { RawData, WebSocket } from 'ws';
import type { ByteTransport, SpdyConnection } from './connection.js';

/** Bytes in flight on a WebSocket after which writers are asked to wait. */
const WEBSOCKET_HIGH_WATER = 1024 * 1024;

/** Resets on traffic either way; fires once after `ms` of silence. */
export class IdleTimer {
  private timer: NodeJS.Timeout | undefined;
  constructor(
    private readonly ms: number,
    private readonly onIdle: () => void,
  ) {
    this.touch();
  }
  touch(): void {
    clearTimeout(this.timer);
    this.timer = setTimeout(this.onIdle, this.ms);
    this.timer.unref();
  }
  stop(): void {
    clearTimeout(this.timer);
  }
}

/** SPDY straight on the upgraded TCP socket. */
export function bindSocket(socket: Duplex, head: Buffer, create: (transport: ByteTransport) => SpdyConnection, idleTimeoutMs: number): SpdyConnection {
  (socket as Socket).setNoDelay?.(true);
  const idle = new IdleTimer(idleTimeoutMs, () => connection.destroy('idle timeout'));
  let corked = false;
  const connection = create({
    write: (bytes) => {
      idle.touch();
      // Frames written in one turn (a data frame is a header and a payload) leave in one send.
      if (!corked) {
        corked = true;
        socket.cork();
        process.nextTick(() => {
          corked = false;
          socket.uncork();
        });
      }
      return socket.write(bytes);
    },
    end: () => socket.end(),
    destroy: () => socket.destroy(),
  });
  socket.on('data', (chunk: Buffer) => {
    idle.touch();
    connection.receive(chunk);
  });
  socket.on('drain', () => connection.transportDrained());
  socket.on('close', () => {
    idle.stop();
    connection.transportClosed();
  });
  socket.on('end', () => socket.end());
  if (head.length > 0) connection.receive(head);
  return connection;
}

/**
 * SPDY tunneled in a WebSocket (subprotocol `SPDY/3.1+portforward.k8s.io`): binary messages carry
 * a byte stream, and frames may span messages.
 */
export function bindWebSocket(ws: WebSocket, create: (transport: ByteTransport) => SpdyConnection, idleTimeoutMs: number): SpdyConnection {
  let inFlight = 0;
  let blocked = false;
  // A client's first frames may be written before the handshake completes.
  const early: Buffer[] = [];
  ws.once('open', () => {
    for (const bytes of early.splice(0)) ws.send(bytes, { binary: true });
  });
  const idle = new IdleTimer(idleTimeoutMs, () => connection.destroy('idle timeout'));
  const connection = create({
    write: (bytes) => {
      idle.touch();
      if (ws.readyState === ws.CONNECTING) {
        early.push(bytes);
        return true;
      }
      if (ws.readyState !== ws.OPEN) return true;
      inFlight += bytes.length;
      ws.send(bytes, { binary: true }, () => {
        inFlight -= bytes.length;
        if (blocked && inFlight < WEBSOCKET_HIGH_WATER / 2) {
          blocked = false;
          connection.transportDrained();
        }
      });
      if (inFlight >= WEBSOCKET_HIGH_WATER) blocked = true;
      return !blocked;
    },
    end: () => ws.close(1000),
    destroy: () => ws.terminate(),
  });
  ws.on('message', (raw: RawData) => {
    idle.touch();
    connection.receive(Buffer.isBuffer(raw) ? raw : Array.isArray(raw) ? Buffer.concat(raw) : Buffer.from(raw));
  });
  ws.on('close', () => {
    idle.stop();
    connection.transportClosed();
  });
  ws.on('error', () => connection.transportClosed('WebSocket error'));
  return connection;
}
