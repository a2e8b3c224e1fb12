import type { cri } from '@skiff/proto';
import type { CgroupDetail } from '../stats/cgroup-detail.js';
import type { CgroupSample } from '../stats/cgroup-stats.js';
import type { InterfaceCounters } from '../stats/net-dev.js';
import type { BlockIo } from '../stats/block-io.js';

/** What one container's metrics are made of, read once per call. */
export interface ContainerReading {
  id: string;
  /** The container's name in its pod. */
  container: string;
  /** k8s_<container>_<pod>_<namespace>_<uid>_<attempt> */
  name: string;
  image: string;
  sample: CgroupSample;
  detail: CgroupDetail;
  /** The writable layer's use, and the capacity and free inodes of the filesystem it is on (statfs). */
  layer: { bytes: number; inodes: number; limitBytes?: number; inodesFree?: number };
  /** When the container was started (ns since the epoch); undefined before StartContainer. */
  startedAt?: string;
  /** The /dev names of the block devices in detail.blockIo, by "major:minor" ("" when unknown). */
  devices: ReadonlyMap<string, string>;
}

export interface PodReading {
  id: string;
  pod: string;
  namespace: string;
  containers: ContainerReading[];
  /** The pod network namespace's interfaces, loopback left out; none for a pod on the host network. */
  interfaces: InterfaceCounters[];
}

type Kind = 'COUNTER' | 'GAUGE';

/** The labels cAdvisor gives container metrics, in this order. */
const BASE_LABELS = ['container', 'id', 'image', 'name', 'namespace', 'pod'] as const;

interface ContainerMetricDef {
  name: string;
  help: string;
  kind: Kind;
  /** The value; undefined: not available. `at`: the reading's time (ns since the epoch). */
  value?: (c: ContainerReading, at: string) => number | undefined;
  /** Instead of `value`: several values, each with its extra label values (after BASE_LABELS). */
  values?: (c: ContainerReading) => { labels: readonly string[]; value: number | undefined }[];
  extraLabels?: string[];
}

interface NetworkMetricDef {
  name: string;
  help: string;
  value: (i: InterfaceCounters) => number;
}

const seconds = (nanos: number | undefined): number | undefined => (nanos === undefined ? undefined : Math.floor(nanos / 1e9));
const epochSeconds = (nanos: string | undefined): number | undefined => (nanos === undefined ? undefined : Number(BigInt(nanos) / 1_000_000_000n));

/** Per block device: its labels (device and, when `major`, major and minor) and a counter of its I/O. */
function perDevice(c: ContainerReading, major: boolean, value: (io: BlockIo) => number, operation?: string): { labels: readonly string[]; value: number }[] {
  return (c.detail.blockIo ?? []).map((io) => {
    const device = c.devices.get(`${io.major}:${io.minor}`) ?? '';
    const labels = major ? [device, String(io.major), String(io.minor)] : [device];
    return { labels: operation === undefined ? labels : [...labels, operation], value: value(io) };
  });
}

const CONTAINER_METRICS: ContainerMetricDef[] = [
  { name: 'container_cpu_usage_seconds_total', kind: 'COUNTER', help: 'Cumulative cpu time consumed in seconds.', value: (c) => seconds(c.sample.cpuNanos) },
  { name: 'container_cpu_user_seconds_total', kind: 'COUNTER', help: 'Cumulative user cpu time consumed in seconds.', value: (c) => seconds(c.detail.cpuUserNanos) },
  { name: 'container_cpu_system_seconds_total', kind: 'COUNTER', help: 'Cumulative system cpu time consumed in seconds.', value: (c) => seconds(c.detail.cpuSystemNanos) },
  { name: 'container_cpu_cfs_periods_total', kind: 'COUNTER', help: 'Number of elapsed enforcement period intervals.', value: (c) => c.detail.cfsPeriods },
  { name: 'container_cpu_cfs_throttled_periods_total', kind: 'COUNTER', help: 'Number of throttled period intervals.', value: (c) => c.detail.cfsThrottledPeriods },
  { name: 'container_cpu_cfs_throttled_seconds_total', kind: 'COUNTER', help: 'Total time duration the container has been throttled.', value: (c) => seconds(c.detail.cfsThrottledNanos) },
  { name: 'container_memory_usage_bytes', kind: 'GAUGE', help: 'Current memory usage in bytes, including all memory regardless of when it was accessed', value: (c) => c.sample.memoryUsage },
  { name: 'container_memory_working_set_bytes', kind: 'GAUGE', help: 'Current working set in bytes.', value: (c) => c.sample.workingSet },
  { name: 'container_memory_rss', kind: 'GAUGE', help: 'Size of RSS in bytes.', value: (c) => c.sample.rss },
  { name: 'container_memory_cache', kind: 'GAUGE', help: 'Number of bytes of page cache memory.', value: (c) => c.detail.cacheBytes },
  { name: 'container_memory_mapped_file', kind: 'GAUGE', help: 'Size of memory mapped files in bytes.', value: (c) => c.detail.mappedFileBytes },
  { name: 'container_memory_kernel_usage', kind: 'GAUGE', help: 'Size of kernel memory allocated in bytes.', value: (c) => c.detail.kernelBytes },
  { name: 'container_memory_max_usage_bytes', kind: 'GAUGE', help: 'Maximum memory usage recorded in bytes', value: (c) => c.detail.maxUsageBytes },
  { name: 'container_memory_failcnt', kind: 'COUNTER', help: 'Number of memory usage hits limits', value: (c) => c.detail.memoryFailcnt },
  { name: 'container_memory_swap', kind: 'GAUGE', help: 'Container swap usage in bytes.', value: (c) => c.sample.swapUsage },
  {
    name: 'container_memory_failures_total',
    kind: 'COUNTER',
    help: 'Cumulative count of memory allocation failures.',
    extraLabels: ['failure_type', 'scope'],
    // The counters are hierarchical: the container's cgroup has no children, so both scopes agree.
    values: (c) =>
      (['container', 'hierarchy'] as const).flatMap((scope) => [
        { labels: ['pgfault', scope], value: c.sample.pageFaults },
        { labels: ['pgmajfault', scope], value: c.sample.majorPageFaults },
      ]),
  },
  { name: 'container_oom_events_total', kind: 'COUNTER', help: 'Count of out of memory events observed for the container', value: (c) => c.detail.oomKills },
  { name: 'container_fs_usage_bytes', kind: 'GAUGE', help: "Number of bytes that are consumed by the container's writable layer.", value: (c) => c.layer.bytes },
  { name: 'container_fs_inodes_total', kind: 'GAUGE', help: "Number of inodes the container's writable layer holds.", value: (c) => c.layer.inodes },
  { name: 'container_fs_limit_bytes', kind: 'GAUGE', help: "Number of bytes of the filesystem the container's writable layer is on.", value: (c) => c.layer.limitBytes },
  { name: 'container_fs_inodes_free', kind: 'GAUGE', help: "Number of available inodes on the filesystem the container's writable layer is on.", value: (c) => c.layer.inodesFree },
  ...(
    [
      ['container_fs_reads_bytes_total', 'Cumulative count of bytes read', (io) => io.readBytes],
      ['container_fs_reads_total', 'Cumulative count of reads completed', (io) => io.reads],
      ['container_fs_writes_bytes_total', 'Cumulative count of bytes written', (io) => io.writeBytes],
      ['container_fs_writes_total', 'Cumulative count of writes completed', (io) => io.writes],
    ] as const satisfies readonly (readonly [string, string, (io: BlockIo) => number])[]
  ).map(([name, help, value]): ContainerMetricDef => ({ name, help, kind: 'COUNTER', extraLabels: ['device'], values: (c) => perDevice(c, false, value) })),
  {
    name: 'container_blkio_device_usage_total',
    kind: 'COUNTER',
    help: 'Blkio device bytes usage',
    extraLabels: ['device', 'major', 'minor', 'operation'],
    values: (c) => [...perDevice(c, true, (io) => io.readBytes, 'Read'), ...perDevice(c, true, (io) => io.writeBytes, 'Write')],
  },
  { name: 'container_processes', kind: 'GAUGE', help: 'Number of processes running inside the container.', value: (c) => c.detail.processes },
  { name: 'container_threads', kind: 'GAUGE', help: 'Number of threads running inside the container', value: (c) => c.sample.pids },
  { name: 'container_threads_max', kind: 'GAUGE', help: 'Maximum number of threads allowed inside the container, infinity if value is zero', value: (c) => c.detail.threadsMax },
  { name: 'container_file_descriptors', kind: 'GAUGE', help: 'Number of open file descriptors for the container.', value: (c) => c.detail.fileDescriptors },
  { name: 'container_sockets', kind: 'GAUGE', help: 'Number of open sockets for the container.', value: (c) => c.detail.sockets },
  { name: 'container_start_time_seconds', kind: 'GAUGE', help: 'Start time of the container since unix epoch in seconds.', value: (c) => epochSeconds(c.startedAt) },
  { name: 'container_last_seen', kind: 'GAUGE', help: 'Last time a container was seen by the exporter', value: (_c, at) => epochSeconds(at) },
  { name: 'container_spec_cpu_period', kind: 'GAUGE', help: 'CPU period of the container.', value: (c) => c.detail.cpuPeriodMicros },
  { name: 'container_spec_cpu_quota', kind: 'GAUGE', help: 'CPU quota of the container.', value: (c) => c.detail.cpuQuotaMicros },
  { name: 'container_spec_cpu_shares', kind: 'GAUGE', help: 'CPU share of the container.', value: (c) => c.detail.cpuShares },
  { name: 'container_spec_memory_limit_bytes', kind: 'GAUGE', help: 'Memory limit for the container.', value: (c) => c.sample.memoryLimit ?? 0 },
  {
    name: 'container_spec_memory_swap_limit_bytes',
    kind: 'GAUGE',
    help: 'Memory swap limit for the container (swap alone; 0: unlimited).',
    // Reported where the kernel accounts swap (its usage was read).
    value: (c) => (c.sample.swapUsage === undefined ? undefined : (c.sample.swapLimit ?? 0)),
  },
];

const NETWORK_METRICS: NetworkMetricDef[] = [
  { name: 'container_network_receive_bytes_total', help: 'Cumulative count of bytes received', value: (i) => i.rxBytes },
  { name: 'container_network_receive_packets_total', help: 'Cumulative count of packets received', value: (i) => i.rxPackets },
  { name: 'container_network_receive_errors_total', help: 'Cumulative count of errors encountered while receiving', value: (i) => i.rxErrors },
  { name: 'container_network_receive_packets_dropped_total', help: 'Cumulative count of packets dropped while receiving', value: (i) => i.rxDropped },
  { name: 'container_network_transmit_bytes_total', help: 'Cumulative count of bytes transmitted', value: (i) => i.txBytes },
  { name: 'container_network_transmit_packets_total', help: 'Cumulative count of packets transmitted', value: (i) => i.txPackets },
  { name: 'container_network_transmit_errors_total', help: 'Cumulative count of errors encountered while transmitting', value: (i) => i.txErrors },
  { name: 'container_network_transmit_packets_dropped_total', help: 'Cumulative count of packets dropped while transmitting', value: (i) => i.txDropped },
];

const DESCRIPTORS: readonly cri.MetricDescriptor[] = [
  ...CONTAINER_METRICS.map((m) => ({ name: m.name, help: m.help, label_keys: [...BASE_LABELS, ...(m.extraLabels ?? [])] })),
  ...NETWORK_METRICS.map((m) => ({ name: m.name, help: m.help, label_keys: [...BASE_LABELS, 'interface'] })),
];

/** Every metric this runtime reports, as ListMetricDescriptors answers. */
export function metricDescriptors(): readonly cri.MetricDescriptor[] {
  return DESCRIPTORS;
}

function metric(name: string, kind: Kind, labels: string[], value: number, at: string): cri.Metric {
  return { name, timestamp: at, metric_type: kind, label_values: labels, value: { value: String(Math.max(0, Math.round(value))) } };
}

function containerMetrics(pod: PodReading, c: ContainerReading, at: string): cri.Metric[] {
  // One label array for every metric without labels of its own (the encoder only reads it).
  const base = [c.container, c.id, c.image, c.name, pod.namespace, pod.pod];
  const out: cri.Metric[] = [];
  for (const m of CONTAINER_METRICS) {
    if (m.value) {
      const value = m.value(c, at);
      if (value !== undefined) out.push(metric(m.name, m.kind, base, value, at));
      continue;
    }
    for (const { labels, value } of m.values!(c)) {
      if (value !== undefined) out.push(metric(m.name, m.kind, [...base, ...labels], value, at));
    }
  }
  return out;
}

/** One pod's metrics: network at the pod's level (container ""), everything else per container. */
export function podSandboxMetrics(pod: PodReading, at: string): cri.PodSandboxMetrics {
  const network: cri.Metric[] = [];
  for (const i of pod.interfaces) {
    const labels = ['', pod.id, '', '', pod.namespace, pod.pod, i.name];
    for (const m of NETWORK_METRICS) network.push(metric(m.name, 'COUNTER', labels, m.value(i), at));
  }
  return {
    pod_sandbox_id: pod.id,
    metrics: network,
    container_metrics: pod.containers.map((c) => ({ container_id: c.id, metrics: containerMetrics(pod, c, at) })),
  };
}
