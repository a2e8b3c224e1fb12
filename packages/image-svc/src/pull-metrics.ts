import { Counter, Histogram, type DaemonMetrics } from '@skiff/common/metrics';

/** image-svc's pull families: bytes of pulled images, pull durations, failures by reason (the gRPC status). */
export class PullMetrics {
  private readonly bytes: Counter;
  private readonly duration: Histogram;
  private readonly failures: Counter<'reason'>;

  constructor(metrics: DaemonMetrics) {
    this.bytes = new Counter({ name: 'skiff_image_pull_bytes_total', help: 'Bytes of the images pulled (config and layers).', registers: [metrics.registry] });
    this.duration = new Histogram({
      name: 'skiff_image_pull_duration_seconds',
      help: 'Time a successful PullImage took.',
      buckets: [0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600],
      registers: [metrics.registry],
    });
    this.failures = new Counter({ name: 'skiff_image_pull_failures_total', help: 'Failed pulls, by reason (the gRPC status answered).', labelNames: ['reason'], registers: [metrics.registry] });
  }

  succeeded(bytes: number, seconds: number): void {
    this.bytes.inc(bytes);
    this.duration.observe(seconds);
  }

  failed(reason: string): void {
    this.failures.inc({ reason });
  }
}
