import { Counter, Histogram, Registry, registerProcessMetrics } from './prom-client.js';

/**
 * A daemon's Prometheus registry: the process metrics every daemon has (prom-client's defaults:
 * CPU, memory, file descriptors, event loop lag, heap, GC) and its gRPC calls by method and status.
 * Each daemon adds its own families to `registry`.
 */
export class DaemonMetrics {
  readonly registry = new Registry();
  private readonly requests: Counter<'method' | 'code'>;
  private readonly duration: Histogram<'method'>;

  constructor(readonly service: string) {
    this.registry.setDefaultLabels({ service });
    registerProcessMetrics(this.registry);
    this.requests = new Counter({
      name: 'skiff_grpc_requests_total',
      help: 'gRPC calls answered, by method and status code (OK for success).',
      labelNames: ['method', 'code'],
      registers: [this.registry],
    });
    this.duration = new Histogram({
      name: 'skiff_grpc_request_duration_seconds',
      help: 'Time from a gRPC call arriving to its answer, by method.',
      labelNames: ['method'],
      buckets: [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60],
      registers: [this.registry],
    });
  }

  /** One answered call; `code` is the gRPC status name. */
  observeCall(method: string, code: string, seconds: number): void {
    this.requests.inc({ method, code });
    this.duration.observe({ method }, seconds);
  }
}
