import { spawn } from 'node:child_process';
import type { RawData, WebSocket } from 'ws';
import type { Logger, PortForwardStreamRequest } from '@skiff/common/core';
import { countForwarded } from './forwarded-bytes.js';
import { HostPortConnection, type PortConnection } from './host-port-dial.js';

/** WebSocket port-forward subprotocols: channel pairs per port, or SPDY frames carried in the WebSocket. */
export const SPDY_TUNNEL_PROTOCOL = 'SPDY/3.1+portforward.k8s.io';
export const PORT_FORWARD_PROTOCOLS = ['v4.channel.k8s.io', 'channel.k8s.io', SPDY_TUNNEL_PROTOCOL] as const;

/** Run in the pod's network namespace to reach its ports; the host's static busybox carries the bytes. */
export const NSENTER = '/usr/bin/nsenter';
export const BUSYBOX = '/usr/bin/busybox';

/** Ports of a WebSocket port-forward: the request's, else the URL's `port` parameters. */
export function forwardedPorts(request: PortForwardStreamRequest, url: string | undefined): number[] {
  if (request.ports.length > 0) return request.ports;
  const params = new URL(url ?? '/', 'http://x').searchParams.getAll('port');
  return params.map(Number).filter((p) => Number.isInteger(p) && p > 0 && p < 65536);
}

/** One TCP connection to `port` of the pod: inside its network namespace, or on loopback for a pod on the host network. */
export function dialPodPort(request: PortForwardStreamRequest, port: number): PortConnection {
  const connection: PortConnection = request.hostNetwork
    ? new HostPortConnection(port)
    : spawn(NSENTER, [`--net=${request.netnsPath}`, BUSYBOX, 'nc', '127.0.0.1', String(port)], { stdio: ['pipe', 'pipe', 'pipe'] });
  connection.stdout.on('data', (chunk: Buffer) => countForwarded('from_pod', chunk.length));
  return connection;
}

function portPrefix(port: number): Buffer {
  const b = Buffer.alloc(2);
  b.writeUInt16LE(port);
  return b;
}

/**
 * The kubelet's WebSocket port-forward: port i has data channel 2i and error channel 2i+1, and the
 * first frame the server sends on each is the port (uint16, little-endian). Each port gets one TCP
 * connection inside the pod's network namespace; a refused port is reported on its error channel
 * and the others go on.
 */
export function servePortForward(request: PortForwardStreamRequest, ws: WebSocket, idleTimeoutMs: number, maxConnections: number, log: Logger, url?: string): void {
  const ports = forwardedPorts(request, url);
  if (ports.length === 0) {
    ws.close(1008, 'no port to forward: name ports in the PortForward request or as ?port=N');
    return;
  }
  if (ports.length > maxConnections) {
    ws.close(1008, `${ports.length} ports asked for; one session forwards at most ${maxConnections}`);
    return;
  }
  const send = (channel: number, data: Buffer): void => {
    if (ws.readyState === ws.OPEN) ws.send(Buffer.concat([Buffer.of(channel), data]), { binary: true });
  };
  let idle: NodeJS.Timeout | undefined;
  const touch = (): void => {
    clearTimeout(idle);
    idle = setTimeout(() => ws.close(1000, 'idle timeout'), idleTimeoutMs);
    idle.unref();
  };
  touch();

  const connections: PortConnection[] = ports.map((port, i) => {
    send(2 * i, portPrefix(port));
    send(2 * i + 1, portPrefix(port));
    const child = dialPodPort(request, port);
    let errors = '';
    child.stdout.on('data', (chunk: Buffer) => {
      touch();
      send(2 * i, chunk);
    });
    child.stderr.on('data', (chunk: Buffer) => (errors += chunk.toString('utf8')));
    child.stdin.on('error', () => undefined);
    // 'close', not 'exit': the dialer's stderr (why the port was refused) may still be unread at its exit.
    child.on('close', (code) => {
      if (code !== 0 && ws.readyState === ws.OPEN) {
        const reason = errors.trim() || `exit code ${code}`;
        send(2 * i + 1, Buffer.from(`error forwarding port ${port} to pod ${request.podSandboxId}: ${reason}`));
      }
    });
    return child;
  });

  ws.on('message', (raw: RawData) => {
    touch();
    const bytes = Buffer.isBuffer(raw) ? raw : Array.isArray(raw) ? Buffer.concat(raw) : Buffer.from(raw);
    if (bytes.length < 1) return;
    const channel = bytes[0]!;
    const child = channel % 2 === 0 ? connections[channel / 2] : undefined;
    if (child && child.stdin && !child.stdin.destroyed && bytes.length > 1) {
      countForwarded('to_pod', bytes.length - 1);
      child.stdin.write(bytes.subarray(1));
    }
  });
  ws.on('close', () => {
    clearTimeout(idle);
    for (const child of connections) if (child.exitCode === null) child.kill('SIGKILL');
    log.info({ sandbox: request.podSandboxId, ports }, 'port-forward ended');
  });
  log.info({ sandbox: request.podSandboxId, ports }, 'port-forward started');
}
