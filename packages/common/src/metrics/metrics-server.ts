import { createServer, type Server } from 'node:http';
import type { Logger } from '../logger.js';
import type { DaemonMetrics } from './daemon-metrics.js';

/** "host:port", "[v6]:port"; port 0 picks a free one. */
export function parseMetricsAddress(address: string): { host: string; port: number } {
  const m = /^(?:\[([^\]]+)\]|([^:]+)):(\d{1,5})$/.exec(address);
  const port = m ? Number(m[3]) : NaN;
  if (!m || port > 65535) throw new Error(`metrics address "${address}" must be host:port (or "" to switch metrics off)`);
  return { host: (m[1] ?? m[2])!, port };
}

/**
 * Serves GET /metrics in the Prometheus text format on `address` ("" switches it off). A port
 * already taken is logged and the daemon goes on without metrics rather than not starting.
 * Answers the bound address, or undefined.
 */
export async function serveMetrics(address: string, metrics: DaemonMetrics, log: Logger): Promise<{ address: string; server: Server } | undefined> {
  if (address === '') return undefined;
  const { host, port } = parseMetricsAddress(address);
  const server = createServer((req, res) => {
    if (req.method !== 'GET' || (req.url ?? '').split('?')[0] !== '/metrics') {
      res.writeHead(404, { 'content-type': 'text/plain' }).end('not found: metrics are at /metrics\n');
      return;
    }
    metrics.registry.metrics().then(
      (text) => res.writeHead(200, { 'content-type': metrics.registry.contentType }).end(text),
      (err: unknown) => res.writeHead(500, { 'content-type': 'text/plain' }).end(`${(err as Error).message}\n`),
    );
  });
  try {
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(port, host, () => resolve());
    });
  } catch (err) {
    log.warn({ address, err: (err as Error).message }, 'metrics endpoint not served');
    return undefined;
  }
  server.unref();
  const bound = server.address();
  const actual = bound && typeof bound === 'object' ? `${bound.family === 'IPv6' ? `[${bound.address}]` : bound.address}:${bound.port}` : address;
  log.info({ address: actual }, 'metrics served at /metrics');
  return { address: actual, server };
}
