import type { IncomingMessage } from 'node:http';
import type { Duplex } from 'node:stream';

export const SPDY_UPGRADE = 'SPDY/3.1';
export const PROTOCOL_HEADER = 'X-Stream-Protocol-Version';
export const ACCEPTED_PROTOCOLS_HEADER = 'X-Accepted-Stream-Protocol-Versions';

/** Exec and attach over SPDY, best first (the kubelet's list). */
export const SPDY_REMOTE_COMMAND_PROTOCOLS = ['v4.channel.k8s.io', 'v3.channel.k8s.io', 'v2.channel.k8s.io', 'channel.k8s.io'] as const;
export const SPDY_PORT_FORWARD_PROTOCOLS = ['portforward.k8s.io'] as const;

export function isSpdyUpgrade(req: IncomingMessage): boolean {
  return (req.headers.upgrade ?? '').toLowerCase() === SPDY_UPGRADE.toLowerCase();
}

/** Every X-Stream-Protocol-Version the client sent, in its order (repeated headers or comma lists). */
export function offeredProtocols(req: IncomingMessage): string[] {
  const values = req.headersDistinct[PROTOCOL_HEADER.toLowerCase()] ?? [];
  return values.flatMap((v) => v.split(',')).map((v) => v.trim()).filter(Boolean);
}

export type Negotiation = { ok: true; protocol: string | undefined } | { ok: false; offered: string[] };

/**
 * As the kubelet negotiates: the client's first protocol the server speaks; a client that offers
 * none gets the oldest protocol (undefined here); offers that all miss are refused.
 */
export function negotiate(offered: string[], supported: readonly string[]): Negotiation {
  if (offered.length === 0) return { ok: true, protocol: undefined };
  const protocol = offered.find((p) => supported.includes(p));
  return protocol ? { ok: true, protocol } : { ok: false, offered };
}

function respond(socket: Duplex, status: string, headers: Record<string, string>, body: string): void {
  const lines = [`HTTP/1.1 ${status}`, ...Object.entries(headers).map(([k, v]) => `${k}: ${v}`)];
  if (body !== '' || !status.startsWith('101')) lines.push(`Content-Length: ${Buffer.byteLength(body)}`, 'Connection: close');
  socket.write(`${lines.join('\r\n')}\r\n\r\n${body}`);
}

/** 403 naming the protocols this server accepts, in a header and in the body, like the kubelet. */
export function refuseProtocols(socket: Duplex, offered: string[], supported: readonly string[]): void {
  const body = `unable to upgrade: unable to negotiate protocol: client supports [${offered.join(' ')}], server accepts [${supported.join(' ')}]\n`;
  respond(socket, '403 Forbidden', { 'Content-Type': 'text/plain; charset=utf-8', [ACCEPTED_PROTOCOLS_HEADER]: supported.join(', ') }, body);
  socket.end();
}

/** The request must ask for the upgrade in full (Connection: Upgrade), or it is answered 400. */
export function hasUpgradeHeaders(req: IncomingMessage): boolean {
  const connection = (req.headers.connection ?? '').toLowerCase().split(',').map((v) => v.trim());
  return connection.includes('upgrade') && isSpdyUpgrade(req);
}

export function acceptUpgrade(socket: Duplex, protocol: string | undefined): void {
  const headers: Record<string, string> = { Connection: 'Upgrade', Upgrade: SPDY_UPGRADE };
  if (protocol) headers[PROTOCOL_HEADER] = protocol;
  respond(socket, '101 Switching Protocols', headers, '');
}
