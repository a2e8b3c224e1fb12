export { DaemonMetrics } from './metrics/daemon-metrics.js';
export { parseMetricsAddress, serveMetrics } from './metrics/metrics-server.js';
export { metricsAddressFile, startDaemonMetrics } from './metrics/start-daemon-metrics.js';
export { Counter, Gauge, Histogram } from './metrics/prom-client.js';
