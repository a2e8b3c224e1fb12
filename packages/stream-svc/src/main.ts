import { promises as fs } from 'node:fs';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
// The part of common that does not load @grpc/grpc-js, which this service never uses.
import { collectGarbageWhenQuiet, createLogger, loadConfig, notifyReady, parseDuration, reloadConfigOnSighup, requireHostTools, stopOnSignals, keepAllocatorToThisProcess } from '@skiff/common/core';
import { Counter, startDaemonMetrics } from '@skiff/common/metrics';
import { STREAM_TOOLS } from './host-tools.js';
import { observeForwardedBytes } from './forwarded-bytes.js';
import { startInternalServer } from './internal-server.js';
import { startPublicServer } from './public-server.js';
import { TokenStore } from './token-store.js';

async function main(): Promise<void> {
  keepAllocatorToThisProcess();
  const { values } = parseArgs({ options: { config: { type: 'string' } } });
  const config = await loadConfig(values.config);
  const log = createLogger('stream-svc', config.log_level);
  await requireHostTools(STREAM_TOOLS);
  const scratchDir = join(config.run_dir, 'stream');
  await fs.mkdir(scratchDir, { recursive: true, mode: 0o700 });

  const tokens = new TokenStore();
  const idleTimeoutMs = parseDuration(config.stream.idle_timeout)!;
  const limits = {
    maxConnections: config.stream.max_connections,
    maxStreamsPerSession: config.stream.max_streams_per_session,
    maxPortForwardConnections: config.stream.max_port_forward_connections,
  };
  const metrics = await startDaemonMetrics('stream-svc', config.stream.metrics_address, config.run_dir, log);
  collectGarbageWhenQuiet(log);
  const sessions = new Counter({
    name: 'skiff_stream_sessions_total',
    help: 'Exec, attach and port-forward sessions started, by transport and kind.',
    labelNames: ['transport', 'kind'],
    registers: [metrics.registry],
  });
  const onSession = (transport: string, kind: string): void => sessions.inc({ transport, kind });
  const forwarded = new Counter({
    name: 'skiff_stream_port_forward_bytes_total',
    help: 'Bytes carried by port-forward connections, by direction.',
    labelNames: ['direction'],
    registers: [metrics.registry],
  });
  observeForwardedBytes((direction, bytes) => forwarded.inc({ direction }, bytes));
  const pub = await startPublicServer({ address: config.stream.address, port: config.stream.port, tokens, idleTimeoutMs, scratchDir, limits, conmon: config.runtime.conmon, log, onSession });
  const internal = await startInternalServer({ socket: config.stream.internal_socket, tokens, baseUrl: () => pub.baseUrl, log });
  log.info({ url: pub.baseUrl, internalSocket: config.stream.internal_socket }, 'stream service ready');
  notifyReady(log);

  reloadConfigOnSighup('stream-svc', values.config, config, log, async (next) => {
    log.level = next.log_level;
    // Each exec brings its handler's runtime from runtime-svc: stream-svc has nothing of them to reload.
    return ['log_level', 'runtime.handlers'];
  });
  stopOnSignals(log, async () => {
    await internal.close();
    await fs.rm(config.stream.internal_socket, { force: true });
    await pub.app.close();
  });
}

main().catch((err: unknown) => {
  process.stderr.write(`stream-svc: ${err instanceof Error ? err.message : String(err)}\n`);
  process.exit(1);
});
