import { Counter, Gauge, type DaemonMetrics } from '@skiff/common/metrics';
import type { RuntimeContext } from '../daemon/context.js';

/**
 * runtime-svc's own Prometheus families: containers by state and handlers whose runc has known
 * container escapes (read at scrape time), container starts and OOM kills (counted from the
 * container events, as they happen).
 */
export function registerRuntimeMetrics(metrics: DaemonMetrics, ctx: RuntimeContext): void {
  new Gauge({
    name: 'skiff_containers',
    help: 'Containers this runtime knows, by state.',
    labelNames: ['state'],
    registers: [metrics.registry],
    collect() {
      const counts = new Map<string, number>(['created', 'running', 'exited'].map((s) => [s, 0]));
      for (const c of ctx.state.containers.values()) counts.set(c.phase, (counts.get(c.phase) ?? 0) + 1);
      this.reset();
      for (const [state, n] of counts) this.set({ state }, n);
    },
  });
  new Gauge({
    name: 'skiff_runtime_outdated',
    help: 'Per runtime handler: 1 when its runtime is a runc older than the first release of its line with every known container escape fixed, else 0; the sum counts them.',
    labelNames: ['handler', 'path', 'version'],
    registers: [metrics.registry],
    collect() {
      this.reset();
      for (const v of ctx.runtimeVersions) this.set({ handler: v.handler, path: v.path, version: v.version ?? 'unknown' }, v.outdated ? 1 : 0);
    },
  });
  const starts = new Counter({ name: 'skiff_container_starts_total', help: 'Containers started.', registers: [metrics.registry] });
  const ooms = new Counter({ name: 'skiff_container_oom_kills_total', help: 'Containers ended by the OOM killer.', registers: [metrics.registry] });
  ctx.events.bus.subscribe({
    deliver(event) {
      if (event.container_event_type === 'CONTAINER_STARTED_EVENT' && event.containers_statuses?.some((s) => s.id === event.container_id)) starts.inc();
      if (event.container_event_type === 'CONTAINER_STOPPED_EVENT' && event.containers_statuses?.some((s) => s.id === event.container_id && s.reason === 'OOMKilled')) ooms.inc();
      return true;
    },
    overflowed: () => undefined,
  });
}
