import { promises as fs } from 'node:fs';
import { join } from 'node:path';
import type { Logger } from '../logger.js';
import { Counter } from './prom-client.js';
import { DaemonMetrics } from './daemon-metrics.js';
import { serveMetrics } from './metrics-server.js';

/** Where a running daemon says which address its metrics are served at (port 0 picks one). */
export function metricsAddressFile(runDir: string, service: string): string {
  return join(runDir, `${service}.metrics`);
}

/**
 * A daemon's metrics: its registry, and /metrics served on `address` ("": kept but not served).
 * The bound address goes to `<run_dir>/<service>.metrics`. A gRPC daemon also passes
 * `metrics.observeCall` to setCallObserver (kept apart so that stream-svc never loads gRPC).
 */
export async function startDaemonMetrics(service: string, address: string, runDir: string, log: Logger): Promise<DaemonMetrics> {
  const metrics = new DaemonMetrics(service);
  countSupervisorRestarts(metrics);
  const served = await serveMetrics(address, metrics, log);
  const file = metricsAddressFile(runDir, service);
  await fs.mkdir(runDir, { recursive: true, mode: 0o755 });
  if (served) await fs.writeFile(file, `${served.address}\n`, { mode: 0o644 });
  else await fs.rm(file, { force: true });
  return metrics;
}

/**
 * Under `skiff up` (SKIFF_SUPERVISED=1), how often the supervisor restarted this service after it
 * died: the supervisor passes the count in SKIFF_SERVICE_RESTARTS (it serves no metrics itself).
 */
function countSupervisorRestarts(metrics: DaemonMetrics): void {
  if (process.env['SKIFF_SUPERVISED'] !== '1') return;
  const restarts = Number(process.env['SKIFF_SERVICE_RESTARTS'] ?? '0');
  new Counter({
    name: 'skiff_service_restarts_total',
    help: 'Times skiff up restarted this service after it died.',
    registers: [metrics.registry],
  }).inc(Number.isSafeInteger(restarts) && restarts > 0 ? restarts : 0);
}
