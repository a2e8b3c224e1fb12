import { createRequire } from 'node:module';
import type { SkiffConfig } from '@skiff/common';
import { createImageClient, createRuntimeClient, callUnary } from '@skiff/proto';

const require = createRequire(import.meta.url);

/** A daemon that `skiff up` runs and watches. Later services add themselves here. */
export interface ServiceSpec {
  name: string;
  /** The JavaScript entry point run with this node binary. */
  entry: string;
  /** The socket or address operators and the kubelet use. */
  endpoint(config: SkiffConfig): string;
  /** Resolves when the service answers a real call on its endpoint. */
  probe(config: SkiffConfig, timeoutMs: number): Promise<void>;
}

async function closing<C extends { close(): void }>(client: C, use: (client: C) => Promise<unknown>): Promise<void> {
  try {
    await use(client);
  } finally {
    client.close();
  }
}

function probeImageService(config: SkiffConfig, timeoutMs: number): Promise<void> {
  return closing(createImageClient(config.image.socket), (client) => callUnary(client, 'ImageFsInfo', {}, { timeoutMs }));
}

function probeRuntimeService(config: SkiffConfig, timeoutMs: number): Promise<void> {
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

export const SERVICES: readonly ServiceSpec[] = [
  {
    name: 'image-svc',
    entry: require.resolve('@skiff/image-svc/dist/main.js'),
    endpoint: (config) => config.image.socket,
    probe: probeImageService,
  },
  {
    name: 'runtime-svc',
    entry: require.resolve('@skiff/runtime-svc/dist/main.js'),
    endpoint: (config) => config.runtime.socket,
    probe: probeRuntimeService,
  },
  {
    name: 'stream-svc',
    entry: require.resolve('@skiff/stream-svc/dist/main.js'),
    endpoint: streamBaseUrl,
    probe: probeStreamService,
  },
];
