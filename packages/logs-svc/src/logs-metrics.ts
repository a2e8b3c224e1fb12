import { Counter, Gauge, type DaemonMetrics } from '@skiff/common/metrics';
import type { LogEngine } from './log-engine.js';

/** logs-svc's families, read from the engine at scrape time. */
export function registerLogsMetrics(metrics: DaemonMetrics, engine: LogEngine): void {
  const registers = [metrics.registry];
  new Counter({
    name: 'skiff_logs_lines_total',
    help: 'Container output entries written to CRI log files.',
    registers,
    collect() {
      this.reset();
      this.inc(engine.throughput.lines);
    },
  });
  new Counter({
    name: 'skiff_logs_bytes_total',
    help: 'Bytes of container output written to CRI log files.',
    registers,
    collect() {
      this.reset();
      this.inc(engine.throughput.bytes);
    },
  });
  new Gauge({
    name: 'skiff_logs_journal_lag_seconds',
    help: 'How far the newest entry written to a log file is behind the newest one read from the journal.',
    registers,
    collect() {
      const { newestReadMicros, newestWrittenMicros } = engine.throughput;
      this.set(newestReadMicros > newestWrittenMicros ? Number(newestReadMicros - newestWrittenMicros) / 1e6 : 0);
    },
  });
  new Counter({
    name: 'skiff_logs_unknown_container_entries_total',
    help: 'Container output entries dropped because logs-svc did not follow their container when they came.',
    registers,
    collect() {
      this.reset();
      this.inc(engine.status().unknown.total);
    },
  });
  new Counter({
    name: 'skiff_logs_journald_suppressed_total',
    help: "Messages journald's rate limit dropped, from its \"Suppressed N messages\" notices.",
    registers,
    collect() {
      this.reset();
      this.inc(engine.status().suppressed.total);
    },
  });
}
