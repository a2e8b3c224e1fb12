import { createRequire } from 'node:module';
import type * as PromClient from 'prom-client';

/*
 * prom-client's classes, loaded module by module. Its index also loads the Pushgateway, the
 * cluster aggregator, Summary (with tdigest) and, for the exemplars of its CPU metric,
 * @opentelemetry/api: none of them used by Skiff, and ~5 MiB of RSS in every daemon.
 */
const load = createRequire(import.meta.url);

export const Registry = load('prom-client/lib/registry') as typeof PromClient.Registry;
export const Counter = load('prom-client/lib/counter') as typeof PromClient.Counter;
export const Gauge = load('prom-client/lib/gauge') as typeof PromClient.Gauge;
export const Histogram = load('prom-client/lib/histogram') as typeof PromClient.Histogram;
export type Registry = PromClient.Registry;
export type Counter<T extends string = string> = PromClient.Counter<T>;
export type Gauge<T extends string = string> = PromClient.Gauge<T>;
export type Histogram<T extends string = string> = PromClient.Histogram<T>;

type DefaultMetric = (registry: PromClient.Registry, config: object) => void;

/**
 * prom-client's default metrics but its process CPU time and its handle counts (gauges named like
 * counters, which promtool rightly flags, and of little use).
 */
const DEFAULT_METRICS = [
  'processStartTime',
  'osMemoryHeap',
  'processOpenFileDescriptors',
  'processMaxFileDescriptors',
  'eventLoopLag',
  'heapSizeAndUsed',
  'heapSpacesSizeAndUsed',
  'version',
  'gc',
];

/**
 * How often the event loop's delay is sampled. Node's default, 10 ms, wakes an idle daemon a
 * hundred times a second: about half a percent of a core each, for nothing else to do.
 */
export const EVENT_LOOP_SAMPLE_MS = 100;

/** The process metrics of prom-client's defaults (CPU, memory, file descriptors, event loop lag, heap, GC). */
export function registerProcessMetrics(registry: PromClient.Registry): void {
  for (const name of DEFAULT_METRICS) (load(`prom-client/lib/metrics/${name}`) as DefaultMetric)(registry, { eventLoopMonitoringPrecision: EVENT_LOOP_SAMPLE_MS });
  registerCpuTime(registry);
}

/** process_cpu_{user,system}_seconds_total and their sum (since the process started), as prom-client names them. */
function registerCpuTime(registry: PromClient.Registry): void {
  let last = { user: 0, system: 0 };
  const user = new Counter({
    name: 'process_cpu_user_seconds_total',
    help: 'Total user CPU time spent in seconds.',
    registers: [registry],
    collect() {
      const now = process.cpuUsage();
      const userSeconds = (now.user - last.user) / 1e6;
      const systemSeconds = (now.system - last.system) / 1e6;
      last = now;
      user.inc(userSeconds);
      system.inc(systemSeconds);
      total.inc(userSeconds + systemSeconds);
    },
  });
  const system = new Counter({ name: 'process_cpu_system_seconds_total', help: 'Total system CPU time spent in seconds.', registers: [registry] });
  const total = new Counter({ name: 'process_cpu_seconds_total', help: 'Total user and system CPU time spent in seconds.', registers: [registry] });
}
