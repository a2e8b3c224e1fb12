import { request as httpRequest } from 'node:http';
import { createRequire } from 'node:module';
import type { SkiffConfig } from '@skiff/common/core';

const require = createRequire(import.meta.url);

/** A daemon that `skiff up` runs and watches. Later services add themselves here. */
export interface ServiceSpec {
  name: string;
  /** The JavaScript entry point run with this node binary. */
  entry: string;
  /** node options given before the entry point. */
  nodeOptions?: string[];
  /** The socket or address operators and the kubelet use. */
  endpoint(config: SkiffConfig): string;
  /** Resolves when the service answers a real call on its endpoint, with what it reports about itself if anything. */
  probe(config: SkiffConfig, timeoutMs: number): Promise<void | Record<string, unknown>>;
}

async function closing<C extends { close(): void }>(client: C, use: (client: C) => Promise<unknown>): Promise<void> {
  try {
    await use(client);
  } finally {
    client.close();
  }
}

// gRPC and the CRI protocol are loaded only when a probe runs (`skiff status`, `skiff up -d`): the
// supervisor itself never speaks gRPC and stays without them.
async function probeImageService(config: SkiffConfig, timeoutMs: number): Promise<void> {
  const { createImageClient, callUnary } = await import('@skiff/proto');
  return closing(createImageClient(config.image.socket), (client) => callUnary(client, 'ImageFsInfo', {}, { timeoutMs }));
}

async function probeRuntimeService(config: SkiffConfig, timeoutMs: number): Promise<void> {
  const { createRuntimeClient, callUnary } = await import('@skiff/proto');
  return closing(createRuntimeClient(config.runtime.socket), (client) => callUnary(client, 'Version', {}, { timeoutMs }));
}

/** The streaming server's base URL (what Exec, Attach and PortForward URLs start with). */
function streamBaseUrl(config: SkiffConfig): string {
  const host = config.stream.address.includes(':') ? `[${config.stream.address}]` : config.stream.address;
  return `http://${host}:${config.stream.port}`;
}

async function probeStreamService(config: SkiffConfig, timeoutMs: number): Promise<void> {
  const res = await fetch(`${streamBaseUrl(config)}/healthz`, { signal: AbortSignal.timeout(timeoutMs) });
  if (!res.ok) throw new Error(`stream-svc health check answered HTTP ${res.status}`);
}

/** logs-svc answers its status (readiness, journald rate-limit notices, write errors) on its root-only internal socket. */
function probeLogsService(config: SkiffConfig, timeoutMs: number): Promise<Record<string, unknown>> {
  return new Promise((resolve, reject) => {
    const req = httpRequest({ socketPath: config.logs.internal_socket, path: '/v1/status', method: 'GET', agent: false, timeout: timeoutMs }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => {
        if (res.statusCode !== 200) return reject(new Error(`logs-svc status answered HTTP ${res.statusCode}`));
        try {
          resolve(JSON.parse(Buffer.concat(chunks).toString('utf8')) as Record<string, unknown>);
        } catch {
          reject(new Error('logs-svc status is not JSON'));
        }
      });
    });
    req.on('timeout', () => req.destroy(new Error(`logs-svc did not answer within ${timeoutMs} ms`)));
    req.on('error', reject);
    req.end();
  });
}

/**
 * By default V8 lets each semi-space of the young generation grow to 16 MiB and keeps the pages:
 * about 8 MiB of a daemon's RSS idle, 15 MiB in runtime-svc under load. What these daemons allocate
 * per call dies young (decoded messages, child-process output, stream chunks), so small semi-spaces
 * only cost more scavenges: with 1 MiB, stream exec latency and port-forward throughput did not move.
 * runtime-svc gets 2 MiB: the same RSS as with 1, half the scavenges while it answers large ListContainers.
 */
const smallYoungGeneration = (semiSpaceMiB: 1 | 2): string => `--max-semi-space-size=${semiSpaceMiB}`;

export const SERVICES: readonly ServiceSpec[] = [
  {
    name: 'image-svc',
    entry: require.resolve('@skiff/image-svc/main'),
    nodeOptions: [smallYoungGeneration(1)],
    endpoint: (config) => config.image.socket,
    probe: probeImageService,
  },
  {
    name: 'runtime-svc',
    entry: require.resolve('@skiff/runtime-svc/main'),
    nodeOptions: [smallYoungGeneration(2)],
    endpoint: (config) => config.runtime.socket,
    probe: probeRuntimeService,
  },
  {
    name: 'stream-svc',
    entry: require.resolve('@skiff/stream-svc/main'),
    nodeOptions: [smallYoungGeneration(1)],
    endpoint: streamBaseUrl,
    probe: probeStreamService,
  },
  {
    name: 'logs-svc',
    entry: require.resolve('@skiff/logs-svc/main'),
    // Almost all it allocates is short-lived buffers, and it holds at most 1 MiB of journal read ahead.
    nodeOptions: [smallYoungGeneration(1), '--max-old-space-size=64'],
    endpoint: (config) => config.logs.internal_socket,
    probe: probeLogsService,
  },
];
