import { createRequire } from 'node:module';
import { httpCall, LOGS_STATUS_PATH, type SkiffConfig } from '@skiff/common/core';
import { jemallocEnvironment, MALLOC_ENVIRONMENT } from './malloc-environment.js';
import { IDLE_COLLECTION, LITE, smallYoungGeneration } from './node-options.js';

const require = createRequire(import.meta.url);
const JEMALLOC_ENVIRONMENT = jemallocEnvironment();

/** A daemon that `skiff up` runs and watches. Later services add themselves here. */
export interface ServiceSpec {
  name: string;
  /** The JavaScript entry point run with this node binary. */
  entry: string;
  /** node options given before the entry point. */
  nodeOptions?: string[];
  /** Added to the environment the service starts with (by `skiff up` and by its systemd unit). */
  environment?: Readonly<Record<string, string>>;
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
  const { status } = await httpCall({ url: `${streamBaseUrl(config)}/healthz` }, { method: 'GET', timeoutMs, timeoutMessage: `stream-svc did not answer within ${timeoutMs} ms` });
  if (status !== 200) throw new Error(`stream-svc health check answered HTTP ${status}`);
}

/** logs-svc answers its status (readiness, journald rate-limit notices, write errors) on its root-only internal socket. */
async function probeLogsService(config: SkiffConfig, timeoutMs: number): Promise<Record<string, unknown>> {
  const { status, body } = await httpCall({ socketPath: config.logs.internal_socket, path: LOGS_STATUS_PATH }, { method: 'GET', timeoutMs, timeoutMessage: `logs-svc did not answer within ${timeoutMs} ms` });
  if (status !== 200) throw new Error(`logs-svc status answered HTTP ${status}`);
  try {
    return JSON.parse(body.toString('utf8')) as Record<string, unknown>;
  } catch {
    throw new Error('logs-svc status is not JSON');
  }
}

export const SERVICES: readonly ServiceSpec[] = [
  {
    name: 'image-svc',
    entry: require.resolve('@skiff/image-svc/main'),
    // Keeps the JIT: lite mode would save ~9 MiB RSS idle, but pulls took up to 1.6x as long.
    nodeOptions: [smallYoungGeneration(1), IDLE_COLLECTION],
    environment: MALLOC_ENVIRONMENT,
    endpoint: (config) => config.image.socket,
    probe: probeImageService,
  },
  {
    name: 'runtime-svc',
    entry: require.resolve('@skiff/runtime-svc/main'),
    // Keeps the JIT: its status and list calls answer in well under a millisecond, and the
    // interpreter would add 0.1-0.3 ms to each for ~12 MiB.
    nodeOptions: [smallYoungGeneration(2), IDLE_COLLECTION],
    environment: JEMALLOC_ENVIRONMENT,
    endpoint: (config) => config.runtime.socket,
    probe: probeRuntimeService,
  },
  {
    name: 'stream-svc',
    entry: require.resolve('@skiff/stream-svc/main'),
    // Keeps the JIT: lite mode would save ~6 MiB RSS (~2 MiB PSS) idle, and ws unmasks what
    // clients send in a JavaScript loop.
    nodeOptions: [smallYoungGeneration(1), IDLE_COLLECTION],
    environment: JEMALLOC_ENVIRONMENT,
    endpoint: streamBaseUrl,
    probe: probeStreamService,
  },
  {
    name: 'logs-svc',
    entry: require.resolve('@skiff/logs-svc/main'),
    // Almost all it allocates is short-lived buffers, and it holds at most 1 MiB of journal read ahead.
    nodeOptions: [smallYoungGeneration(1), IDLE_COLLECTION, '--max-old-space-size=64', ...LITE],
    environment: JEMALLOC_ENVIRONMENT,
    endpoint: (config) => config.logs.internal_socket,
    probe: probeLogsService,
  },
];
