/**
 * Pod start as the kubelet sees it: a real kubelet, kube-apiserver and etcd (scripts/kube-node.sh,
 * through the e2e harness) on a Skiff instance with busybox pulled from a local registry.
 *   - N kubelet-default pods (one busybox container, `sleep 3600`, no shared PID namespace) created
 *     one at a time, then B bursts of S created at once: from the bench's POST of the Pod to its
 *     watch seeing it Running; the kubelet's own figure, kubelet_pod_start_sli_duration_seconds
 *     (quantiles interpolated in its buckets, and exactly per pod from its "Observed pod startup
 *     duration" log line); and where the time went, from the kubelet's log;
 *   - beside the floor of the same steps done by hand in the same run: per pod, the CNI ADD, then
 *     `runc run -d` of the container (S pods at once for the bursts); such a pod has no pause in
 *     Skiff, so the floor has none either;
 *   - then pods up to P (default 110, the kubelet's maxPods), runtime-svc's CPU over T seconds while
 *     the kubelet relists them every second (the other daemons' and the kubelet's beside it), beside
 *     the transport's floor (a bare grpc-js server answering as many calls a second), and the
 *     memory of Skiff's daemons and conmons.
 *
 *   node bench/dist/kubelet-pod-start.js [--pods N] [--bursts B] [--burst-size S] [--full P]
 *       [--cpu-seconds T] [--floor-runs F] [--steps]
 *
 * --steps runs Skiff at debug level and adds its step log: its own time in each CRI call and the
 * wait from StartContainer's end to the kubelet's relist seeing the container. The debug log costs
 * CPU, so the CPU figure to compare comes from a run without it.
 */
import { randomBytes } from 'node:crypto';
import { readFile, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { callUnary } from '@skiff/proto';
import { makeTempDir, removeCgroupTree, startKubeNode, startRuntimeHarness, type KubeNode, type RuntimeHarness } from '@skiff/e2e/lib';
import { idleNodeFloor, makeBundle, prepareHandPod, removeHandPod, startGrpcFloorServer, startHandPod, type Conflist, type HandPod } from './floors.js';
import type { V1Pod } from '@kubernetes/client-node';
import { connectKubeApi, type KubeApi, type PodWatch } from './kube-api.js';
import { kubeletMetricsReader } from './kubelet-metrics.js';
import { readKubeletLog, type KubeletPodTimes } from './kubelet-log.js';
import { histogramDifference, histogramQuantile, readHistogram, type Histogram } from './prom-histogram.js';
import { memoryRows, skiffMemory } from './skiff-memory.js';
import { cpuSeconds, median, mib, ms, percentile, printTable, timed } from './stats.js';
import { logEntries, stepMedians, type StepLine } from './step-log.js';

const NAMESPACE = 'default';
const LABEL = 'bench=kubelet-pod-start';
const SLI = 'kubelet_pod_start_sli_duration_seconds';

// ---------------------------------------------------------------- pods through the API

/** Each pod's first Running as the bench's watch saw it. */
class RunningPods {
  private readonly running = new Map<string, { atMs: number; containerId: string }>();
  private readonly waiters = new Map<string, () => void>();
  readonly watch: PodWatch;

  constructor(api: KubeApi) {
    this.watch = api.watchPods(NAMESPACE, LABEL, (pod, atMs) => this.seen(pod, atMs));
  }

  private seen(pod: V1Pod, atMs: number): void {
    const name = pod.metadata?.name ?? '';
    const containers = pod.status?.containerStatuses ?? [];
    if (this.running.has(name) || pod.status?.phase !== 'Running' || containers.length === 0 || !containers.every((c) => c.state?.running !== undefined)) return;
    this.running.set(name, { atMs, containerId: (containers[0]?.containerID ?? '').replace(/^[^:]+:\/\//, '') });
    this.waiters.get(name)?.();
  }

  /** When the pod was first seen Running, waiting for it (at most `timeoutMs`). */
  async whenRunning(name: string, timeoutMs = 300_000): Promise<{ atMs: number; containerId: string }> {
    if (!this.running.has(name)) {
      let timer: NodeJS.Timeout | undefined;
      await Promise.race([
        new Promise<void>((resolve) => this.waiters.set(name, resolve)),
        this.watch.ended,
        new Promise<void>((_, reject) => (timer = setTimeout(() => reject(new Error(`pod ${name} not Running within ${timeoutMs / 1000} s`)), timeoutMs))),
      ]).finally(() => clearTimeout(timer));
      this.waiters.delete(name);
    }
    const running = this.running.get(name);
    if (running === undefined) throw new Error(`the pod watch ended before pod ${name} ran`);
    return running;
  }
}

interface PodRun {
  name: string;
  /** Epoch ms: the POST sent, its answer (the Pod object exists), the watch seeing the pod Running. */
  sentMs: number;
  createdMs: number;
  runningMs: number;
  containerId: string;
}

function podObject(node: KubeNode, name: string, image: string): V1Pod {
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name, namespace: NAMESPACE, labels: { bench: 'kubelet-pod-start' } },
    spec: {
      nodeName: node.nodeName,
      // The test image's tag would make the default policy Always: a registry round trip per pod.
      containers: [{ name: 'app', image, imagePullPolicy: 'IfNotPresent', command: ['sleep', '3600'] }],
    },
  };
}

async function runPods(api: KubeApi, pods: RunningPods, node: KubeNode, image: string, names: string[]): Promise<PodRun[]> {
  return Promise.all(
    names.map(async (name) => {
      const sentMs = Date.now();
      await api.createPod(podObject(node, name, image));
      const createdMs = Date.now();
      const running = await pods.whenRunning(name);
      return { name, sentMs, createdMs, runningMs: running.atMs, containerId: running.containerId };
    }),
  );
}

async function sliHistogram(metrics: () => Promise<string>): Promise<Histogram | undefined> {
  return readHistogram(await metrics(), SLI);
}

/**
 * The SLI histogram once the kubelet has recorded `count` pods more than `before`, or after 10 s: the
 * kubelet records a pod when its own watch brings the pod's status after it marked the pod running,
 * and when the watch event wins that race it waits for the pod's next update, which can be long after.
 */
async function sliAfter(metrics: () => Promise<string>, before: Histogram | undefined, count: number): Promise<Histogram | undefined> {
  const deadline = Date.now() + 10_000;
  for (;;) {
    const now = await sliHistogram(metrics);
    if ((now !== undefined && now.count - (before?.count ?? 0) >= count) || Date.now() > deadline) return now;
    await new Promise((r) => setTimeout(r, 500));
  }
}

// ---------------------------------------------------------------- the floor

interface Floor {
  oneAtATime: number[];
  /** Per pod, in waves of burstSize. */
  perPodInWaves: number[];
  waveWall: number[];
}

async function measureFloor(h: RuntimeHarness, work: string, runs: number, waves: number, waveSize: number, cgroupParent: string): Promise<Floor> {
  const { info } = await callUnary(h.images, 'ImageStatus', { image: { image: h.imageRef('busybox') }, verbose: true });
  const snapshot = (JSON.parse(info['info'] ?? '{}') as { snapshots: string[] }).snapshots[0]!;
  const net = JSON.parse(await readFile(join(h.skiff.dir, 'cni', '10-skiff.conflist'), 'utf8')) as Conflist;
  const runcRoot = join(work, 'runc');
  const slots = await Promise.all(
    Array.from({ length: waveSize }, async (_, i) => ({ containers: [await makeBundle(join(work, `slot-${i}`, 'app'), snapshot)] })),
  );
  const floor: Floor = { oneAtATime: [], perPodInWaves: [], waveWall: [] };
  const live: HandPod[] = [];
  try {
    for (let i = 0; i < runs; i++) {
      const pod = await prepareHandPod(join(work, `netns-one-${i}`), slots[0]!);
      live.push(pod);
      floor.oneAtATime.push(await timed(() => startHandPod(pod, net, runcRoot, cgroupParent)));
      await removeHandPod(live.pop()!, net, runcRoot);
    }
    for (let w = 0; w < waves; w++) {
      live.push(...(await Promise.all(slots.map((bundles, i) => prepareHandPod(join(work, `netns-wave-${w}-${i}`), bundles)))));
      floor.waveWall.push(await timed(() => Promise.all(live.map(async (pod) => floor.perPodInWaves.push(await timed(() => startHandPod(pod, net, runcRoot, cgroupParent)))))));
      for (const pod of live.splice(0)) await removeHandPod(pod, net, runcRoot);
    }
  } finally {
    for (const pod of live) await removeHandPod(pod, net, runcRoot);
  }
  return floor;
}

// ---------------------------------------------------------------- figures

function p50p99(values: number[]): string {
  return `${ms(percentile(values, 50))} / ${ms(percentile(values, 99))}`;
}

function defined(values: Array<number | undefined>): number[] {
  return values.filter((v): v is number => v !== undefined && Number.isFinite(v));
}

/** The rows of one phase: the bench's own clock, the kubelet's figure, the floor, and where the time went. */
function phaseRows(runs: PodRun[], kubelet: Map<string, KubeletPodTimes>, sli: Histogram | undefined, floorP50: number, steps: StepLine[] | undefined): [string, string][] {
  const times = runs.map((r) => ({ run: r, k: kubelet.get(r.name) }));
  const toRunning = runs.map((r) => r.runningMs - r.sentMs);
  const slo = defined(times.map(({ k }) => (k?.sloSeconds === undefined ? undefined : k.sloSeconds * 1000)));
  const sliFromPost = defined(times.map(({ run, k }) => (k?.watchObservedRunningMs === undefined ? undefined : k.watchObservedRunningMs - run.sentMs)));
  const truncation = defined(times.map(({ run, k }) => (k?.sloSeconds === undefined || k.watchObservedRunningMs === undefined ? undefined : k.sloSeconds * 1000 - (k.watchObservedRunningMs - run.sentMs))));
  const appStarted = ({ run, k }: { run: PodRun; k: KubeletPodTimes | undefined }): number | undefined => k?.startedMs.get(run.containerId);
  const rows: [string, string][] = [
    ['POST of the Pod to Running on the bench\'s watch, p50 / p99', p50p99(toRunning)],
    ['  p50 / floor p50', (median(toRunning) / floorP50).toFixed(2)],
    [`the kubelet's ${SLI}, from its buckets (interpolated), p50 / p99`, sli && sli.count > 0 ? `${ms(histogramQuantile(sli, 0.5) * 1000)} / ${ms(histogramQuantile(sli, 0.99) * 1000)} (${sli.count} pods)` : '-'],
    [`  the same per pod, from its log (podStartSLOduration), p50 / p99`, `${p50p99(slo)} (${slo.length} pods)`],
    ['  p50 / floor p50', (median(slo) / floorP50).toFixed(2)],
    ['  its end (watchObservedRunningTime) from the POST, p50 / p99', p50p99(sliFromPost)],
    ['  what the creation timestamp\'s whole second adds to it, median (0-1000)', ms(median(truncation))],
    [
      '  pods it recorded only at a later update (its watch saw Running > 1 s after it marked it)',
      String(times.filter(({ k }) => k?.observedRunningMs !== undefined && k.watchObservedRunningMs !== undefined && k.watchObservedRunningMs - k.observedRunningMs > 1000).length),
    ],
    ['  pods it has not recorded yet', String(times.filter(({ k }) => k?.sloSeconds === undefined).length)],
    ['where the time went (medians)', ''],
    ['  the POST itself (the API server storing the Pod)', ms(median(runs.map((r) => r.createdMs - r.sentMs)))],
    ['  POST to the kubelet\'s "SyncLoop ADD"', ms(median(defined(times.map(({ run, k }) => (k?.addMs === undefined ? undefined : k.addMs - run.sentMs)))))],
    ['  ADD to the relist seeing the container started (PLEG ContainerStarted)', ms(median(defined(times.map((t) => (t.k?.addMs === undefined ? undefined : (appStarted(t) ?? NaN) - t.k.addMs)))))],
    ['  that relist to the kubelet\'s Running (observedRunningTime)', ms(median(defined(times.map((t) => (t.k?.observedRunningMs === undefined ? undefined : t.k.observedRunningMs - (appStarted(t) ?? NaN))))))],
    ['  the kubelet\'s Running to the bench\'s watch', ms(median(defined(times.map(({ run, k }) => (k?.observedRunningMs === undefined ? undefined : run.runningMs - k.observedRunningMs)))))],
  ];
  if (steps) {
    const startEnd = new Map(steps.filter((s) => s.op === 'StartContainer' && s.container !== undefined && s.time !== undefined).map((s) => [s.container!, s.time!]));
    const end = (run: PodRun): number | undefined => startEnd.get(run.containerId);
    rows.push(
      ['  ADD to Skiff\'s StartContainer answered', ms(median(defined(times.map(({ run, k }) => (k?.addMs === undefined ? undefined : (end(run) ?? NaN) - k.addMs)))))],
      ['  StartContainer answered to the relist seeing it (the relist wait)', ms(median(defined(times.map((t) => (appStarted(t) ?? NaN) - (end(t.run) ?? NaN)))))],
    );
  }
  return rows;
}

async function runtimeCalls(h: RuntimeHarness): Promise<Map<string, number>> {
  const address = (await readFile(join(h.skiff.runDir, 'runtime-svc.metrics'), 'utf8')).trim();
  const page = await (await fetch(`http://${address}/metrics`)).text();
  const calls = new Map<string, number>();
  for (const line of page.split('\n')) {
    if (!line.startsWith('skiff_grpc_requests_total{')) continue;
    const method = /method="([^"]+)"/.exec(line)?.[1];
    if (method !== undefined) calls.set(method, (calls.get(method) ?? 0) + Number(line.slice(line.lastIndexOf(' ') + 1)));
  }
  return calls;
}

/**
 * runtime-svc's CPU per call of each kind the kubelet makes at a steady state, made by the bench
 * `count` times in a row beside the kubelet; the kubelet's share in that time (its rate over the
 * window) is taken off.
 */
async function cpuPerCall(h: RuntimeHarness, pid: number, backgroundRate: number): Promise<Array<[string, number]>> {
  const ids = (await callUnary(h.runtime, 'ListContainers', {})).containers.filter((c) => c.state === 'CONTAINER_RUNNING').map((c) => c.id);
  const kinds: Array<[string, number, (i: number) => Promise<unknown>]> = [
    ['ContainerStatus', 200, (i) => callUnary(h.runtime, 'ContainerStatus', { container_id: ids[i % ids.length]! })],
    ['ListContainers', 100, () => callUnary(h.runtime, 'ListContainers', {})],
    ['ListPodSandbox', 100, () => callUnary(h.runtime, 'ListPodSandbox', {})],
    ['ListContainerStats', 10, () => callUnary(h.runtime, 'ListContainerStats', {})],
    ['Version', 200, () => callUnary(h.runtime, 'Version', {})],
  ];
  const perCall: Array<[string, number]> = [];
  for (const [method, count, call] of kinds) {
    const before = await cpuSeconds(pid);
    const wall = await timed(async () => {
      for (let i = 0; i < count; i++) await call(i);
    });
    const used = (await cpuSeconds(pid)) - before - (backgroundRate * wall) / 1000;
    perCall.push([method, (used * 1000) / count]);
  }
  return perCall;
}

/**
 * The transport's own cost at the kubelet's pace: the CPU (share of one core) of a bare grpc-js
 * server (grpc-floor-server.js) answering `callsPerSecond` ImageStatus calls a second, evenly
 * spread, for `seconds`. Calls that come one by one with the process idle between them cost about
 * twice what the same calls cost made back to back, so this, not a loop, is the floor of the
 * kubelet's steady calls.
 */
async function transportFloor(dir: string, status: unknown, callsPerSecond: number, seconds: number): Promise<number> {
  const server = await startGrpcFloorServer(join(dir, 'grpc-floor.sock'), { status, list: {} });
  const call = (): Promise<unknown> => callUnary(server.client, 'ImageStatus', { image: { image: 'busybox' } });
  try {
    for (let i = 0; i < 200; i++) await call();
    const gapMs = 1000 / callsPerSecond;
    const before = await cpuSeconds(server.pid);
    const start = performance.now();
    for (let i = 1; performance.now() - start < seconds * 1000; i++) {
      await call();
      await new Promise((r) => setTimeout(r, Math.max(0, start + i * gapMs - performance.now())));
    }
    return ((await cpuSeconds(server.pid)) - before) / ((performance.now() - start) / 1000);
  } finally {
    server.stop();
  }
}

// ---------------------------------------------------------------- main

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      pods: { type: 'string', default: '30' },
      bursts: { type: 'string', default: '3' },
      'burst-size': { type: 'string', default: '10' },
      full: { type: 'string', default: '110' },
      'cpu-seconds': { type: 'string', default: '60' },
      'floor-runs': { type: 'string', default: '20' },
      steps: { type: 'boolean', default: false },
    },
  });
  const oneAtATime = Number(values.pods);
  const bursts = Number(values.bursts);
  const burstSize = Number(values['burst-size']);
  const full = Number(values.full);
  const cpuWindow = Number(values['cpu-seconds']);
  const floorRuns = Number(values['floor-runs']);

  const h = await startRuntimeHarness({ images: ['busybox'], skiff: { logLevel: values.steps ? 'debug' : 'info' } });
  const work = await makeTempDir('skiff-bench-kubelet');
  const floorCgroup = `/skiff-bench-kubelet-floor-${process.pid}`;
  let node: KubeNode | undefined;
  let pods: RunningPods | undefined;
  try {
    node = await startKubeNode(h.skiff);
    const api = connectKubeApi(join(node.dir, 'kubeconfig'));
    const metrics = await kubeletMetricsReader(node.dir);
    const image = h.imageRef('busybox');
    const floor = await measureFloor(h, work, floorRuns, bursts, burstSize, floorCgroup);
    pods = new RunningPods(api);
    const tag = randomBytes(3).toString('hex');
    const firstLine = h.skiff.output().length;

    const sli0 = await sliHistogram(metrics);
    const single: PodRun[] = [];
    for (let i = 0; i < oneAtATime; i++) single.push(...(await runPods(api, pods, node, image, [`one-${tag}-${i}`])));
    const sli1 = await sliAfter(metrics, sli0, single.length);
    const burst: PodRun[] = [];
    const burstWalls: number[] = [];
    for (let b = 0; b < bursts; b++) {
      const names = Array.from({ length: burstSize }, (_, i) => `burst-${tag}-${b}-${i}`);
      burstWalls.push(await timed(async () => burst.push(...(await runPods(api, pods!, node!, image, names)))));
    }
    const sli2 = await sliAfter(metrics, sli1, burst.length);

    let running = single.length + burst.length;
    for (let b = 0; running < full; b++) {
      const names = Array.from({ length: Math.min(burstSize, full - running) }, (_, i) => `fill-${tag}-${b}-${i}`);
      await runPods(api, pods, node, image, names);
      running += names.length;
    }
    // Let the last starts' work (status updates, the kubelet's first stats) pass before the window.
    await new Promise((r) => setTimeout(r, 15_000));
    const kubeletPid = await node.kubeletPid();
    const services = ['runtime-svc', 'image-svc', 'stream-svc', 'logs-svc'];
    const pids = new Map<string, number>();
    for (const name of services) {
      const pid = await h.skiff.servicePid(name);
      if (pid !== undefined) pids.set(name, pid);
    }
    if (kubeletPid !== undefined) pids.set('kubelet', kubeletPid);
    const cpuBefore = new Map(await Promise.all([...pids].map(async ([name, pid]) => [name, await cpuSeconds(pid)] as const)));
    const callsBefore = await runtimeCalls(h);
    const windowStart = performance.now();
    await new Promise((r) => setTimeout(r, cpuWindow * 1000));
    const cpuAfter = new Map(await Promise.all([...pids].map(async ([name, pid]) => [name, await cpuSeconds(pid)] as const)));
    const windowSeconds = (performance.now() - windowStart) / 1000;
    const callsAfter = await runtimeCalls(h);
    // Memory first: the bench's own calls below (the stats of 110 containers) grow runtime-svc's heap.
    const memory = await skiffMemory(h);
    const runtimePid = pids.get('runtime-svc')!;
    const perCall = await cpuPerCall(h, runtimePid, ((cpuAfter.get('runtime-svc') ?? 0) - (cpuBefore.get('runtime-svc') ?? 0)) / windowSeconds);
    const kubeletRate = [...callsAfter].reduce((sum, [method, count]) => sum + count - (callsBefore.get(method) ?? 0), 0) / windowSeconds;
    const busyboxStatus = await callUnary(h.images, 'ImageStatus', { image: { image } });
    const floorCpu = await transportFloor(work, busyboxStatus, kubeletRate, Math.min(cpuWindow, 60));
    const idleNode = await idleNodeFloor();
    const listed = (await callUnary(h.runtime, 'ListPodSandbox', {})).items.filter((p) => p.state === 'SANDBOX_READY').length;

    const kubelet = readKubeletLog(await readFile(join(node.dir, 'logs', 'kubelet.log'), 'utf8'), NAMESPACE, new Date().getFullYear());
    const steps = values.steps ? logEntries<StepLine>(h.skiff.output().slice(firstLine), '"steps"').filter((s) => s.msg === 'steps' && s.outcome === 'ok') : undefined;
    const floorOne = median(floor.oneAtATime);
    const floorWave = median(floor.perPodInWaves);

    printTable('Floor, same machine, same run: a pod by hand (CNI ADD, then runc run -d of the container)', [
      [`one at a time (${floor.oneAtATime.length} pods), p50 / p99`, p50p99(floor.oneAtATime)],
      [`${burstSize} at once (${bursts} waves), per pod p50 / p99`, p50p99(floor.perPodInWaves)],
      ['  wall time per wave (median)', ms(median(floor.waveWall))],
    ]);
    printTable(`${single.length} pods one at a time through the kubelet (target: p50 <= 1.3 x the floor = ${ms(1.3 * floorOne)})`, phaseRows(single, kubelet, sli1 ? histogramDifference(sli1, sli0) : undefined, floorOne, steps));
    printTable(`${bursts} bursts of ${burstSize} pods created at once (target: p50 <= 1.3 x the floor = ${ms(1.3 * floorWave)})`, [
      ...phaseRows(burst, kubelet, sli2 ? histogramDifference(sli2, sli1) : undefined, floorWave, steps),
      ['wall time per burst, to the last pod Running (median)', ms(median(burstWalls))],
    ]);
    if (steps) printTable("Skiff's own time in each call during the run (its step log), median ms", stepMedians(h.skiff.output().slice(firstLine), (v) => v.toFixed(1)).map((row) => [`${row[0]} (n=${row[1]})`, row[2] ?? '']));
    const share = (name: string): string => {
      const used = (cpuAfter.get(name) ?? NaN) - (cpuBefore.get(name) ?? NaN);
      return `${((used / windowSeconds) * 100).toFixed(2)} % of one core (${used.toFixed(2)} s of CPU)`;
    };
    const callRates = [...callsAfter]
      .map(([method, count]) => [method, (count - (callsBefore.get(method) ?? 0)) / windowSeconds] as const)
      .filter(([, rate]) => rate > 0)
      .sort((a, b) => b[1] - a[1]);
    printTable(`${listed} running pods under the kubelet: CPU over ${windowSeconds.toFixed(0)} s (target: runtime-svc <= 2 % of one core)${values.steps ? ' (debug log on: not a figure to compare)' : ''}`, [
      ...[...pids.keys()].map((name): [string, string] => [name, share(name)]),
      ["runtime-svc's calls per second in the window", callRates.map(([m, r]) => `${m} ${r.toFixed(2)}`).join(', ')],
      [`floor, same run: a bare grpc-js server answering ${kubeletRate.toFixed(1)} calls/s, evenly spread`, `${(floorCpu * 100).toFixed(2)} % of one core`],
    ]);
    const rateOf = new Map(callRates);
    printTable("runtime-svc's CPU per call, each made by the bench in a row beside the kubelet (its background taken off), and at the kubelet's rate", [
      ...perCall.map(([method, cpuMs]): [string, string] => [method, `${cpuMs.toFixed(2)} ms of CPU a call; x ${(rateOf.get(method) ?? 0).toFixed(2)}/s = ${((cpuMs * (rateOf.get(method) ?? 0)) / 10).toFixed(2)} % of one core`]),
    ]);
    printTable(`Memory at ${listed} running pods: every Skiff daemon + every conmon`, [
      ...Object.entries(memory.perDaemon).map(([name, m]): [string, string] => [`  ${name}`, `${mib(m.rss)} RSS; PSS ${mib(m.pss)}`]),
      [`  one conmon (median of ${memory.conmonCount})`, `${mib(memory.oneConmon.rss)} RSS; PSS ${mib(memory.oneConmon.pss)}`],
      ...memoryRows('in all', memory, idleNode),
    ]);
  } finally {
    pods?.watch.close();
    await node?.stop().catch((err: Error) => process.stderr.write(`kube node stop: ${err.message}\n`));
    const cleanup = Date.now();
    await h.stop();
    if (node) await removeCgroupTree(node.cgroupRoot);
    await removeCgroupTree(floorCgroup);
    process.stdout.write(`\n(cleanup: ${Math.round((Date.now() - cleanup) / 1000)} s)\n`);
    await rm(work, { recursive: true, force: true });
  }
}

main().catch((err: unknown) => {
  process.stderr.write(`${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
  process.exit(1);
});
