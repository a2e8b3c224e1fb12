/**
 * Whether the daemons give back what a burst of work made them grow: `skiff up` started as the
 * end-to-end tests start it, then three bursts one after the other, each followed by a quiet minute:
 *   - 50 pulls of distinct images from the local registry (busybox plus a layer of its own, 4 MiB
 *     of incompressible data, gzip), 5 at once;
 *   - 100 pods run and removed (a busybox container printing 2000 lines, then sleeping), 10 at once;
 *   - 200 exec sessions through stream-svc (`echo`, half WebSocket v5, half SPDY v4), 10 at once.
 * For each daemon (image-svc, runtime-svc, stream-svc, logs-svc): its RSS before the burst, its peak
 * during it (sampled every 250 ms) and 60 s after it went quiet; each split into anonymous and file
 * pages (/proc/<pid>/smaps_rollup) and the anonymous part further into V8's heap (committed and used)
 * and external memory (buffers, from the daemon's /metrics), the rest being malloc's arenas, thread
 * stacks and code. Beside them the floor, measured in the same run: a bare node process running an
 * idle gRPC server (grpc-floor-server.js), as the daemons run it (the same node binary).
 *
 *   node bench/dist/memory-bursts.js [--pulls N] [--pods P] [--execs E] [--quiet-s S] [--layer-mib L]
 */
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { callUnary } from '@skiff/proto';
import { buildImage, buildLayer, getTestImage, makeTempDir, pseudoRandomStream, pushImage, RegistryClient, removeDir, startRuntimeHarness, type RuntimeHarness, wsExec } from '@skiff/e2e/lib';
import { spdyExec } from '@skiff/stream-svc/testing/spdy-client';
import { metricsAddressFile } from '@skiff/common/metrics';
import { startGrpcFloorServer } from './floors.js';
import { mib, printTable } from './stats.js';

const DAEMONS = ['image-svc', 'runtime-svc', 'stream-svc', 'logs-svc'] as const;
type Daemon = (typeof DAEMONS)[number];
const SAMPLE_MS = 250;
/** Long enough for start-up work (JIT, first GCs) to settle. */
const SETTLE_MS = 5000;

interface Memory {
  rss: number;
  anon: number;
  file: number;
  /** From the daemon's /metrics; undefined for the floor, which serves none. */
  heapTotal?: number;
  heapUsed?: number;
  external?: number;
}

async function smapsRollup(pid: number): Promise<Memory> {
  const text = await readFile(`/proc/${pid}/smaps_rollup`, 'utf8');
  const kib = (field: string): number => Number(new RegExp(`^${field}:\\s+(\\d+) kB$`, 'm').exec(text)?.[1] ?? 0) * 1024;
  const rss = kib('Rss');
  const anon = kib('Anonymous');
  return { rss, anon, file: rss - anon };
}

/** nodejs_heap_size_total_bytes, nodejs_heap_size_used_bytes and nodejs_external_memory_bytes from /metrics. */
async function heapFigures(metricsAddress: string): Promise<Pick<Memory, 'heapTotal' | 'heapUsed' | 'external'>> {
  const text = await (await fetch(`http://${metricsAddress}/metrics`)).text();
  const value = (name: string): number | undefined => {
    const m = new RegExp(`^${name}(?:\\{[^}]*\\})? (\\S+)$`, 'm').exec(text);
    return m === null ? undefined : Number(m[1]);
  };
  return { heapTotal: value('nodejs_heap_size_total_bytes'), heapUsed: value('nodejs_heap_size_used_bytes'), external: value('nodejs_external_memory_bytes') };
}

interface Watched {
  name: Daemon;
  pid: number;
  metrics: string;
}

async function watchedDaemons(h: RuntimeHarness): Promise<Watched[]> {
  const out: Watched[] = [];
  for (const name of DAEMONS) {
    const pid = await h.skiff.servicePid(name);
    if (pid === undefined) throw new Error(`no pid for ${name}`);
    const metrics = (await readFile(metricsAddressFile(h.skiff.runDir, name), 'utf8')).trim();
    out.push({ name, pid, metrics });
  }
  return out;
}

/** The RSS split first (what is measured), then the heap from /metrics (which the scrape itself does not grow much). */
async function measure(d: Watched): Promise<Memory> {
  const rollup = await smapsRollup(d.pid);
  return { ...rollup, ...(await heapFigures(d.metrics)) };
}

/** Samples every daemon's RSS while `burst` runs; answers each daemon's sample of highest RSS, measured in full. */
async function peaksDuring(daemons: Watched[], burst: () => Promise<void>): Promise<Map<Daemon, Memory>> {
  const peaks = new Map<Daemon, Memory>();
  let sampling = Promise.resolve();
  const sample = async (): Promise<void> => {
    for (const d of daemons) {
      const { rss } = await smapsRollup(d.pid);
      if (rss > (peaks.get(d.name)?.rss ?? 0)) peaks.set(d.name, await measure(d));
    }
  };
  const timer = setInterval(() => (sampling = sampling.then(sample, () => undefined)), SAMPLE_MS);
  try {
    await burst();
    await sample();
  } finally {
    clearInterval(timer);
    await sampling;
  }
  return peaks;
}

async function measureAll(daemons: Watched[]): Promise<Map<Daemon, Memory>> {
  return new Map(await Promise.all(daemons.map(async (d) => [d.name, await measure(d)] as const)));
}

/** Runs `task` on the items `width` at a time. */
async function inWaves<T>(items: readonly T[], width: number, task: (item: T) => Promise<void>): Promise<void> {
  let next = 0;
  await Promise.all(Array.from({ length: width }, async () => {
    while (next < items.length) await task(items[next++]!);
  }));
}

function breakdown(m: Memory): string {
  const heap = m.heapTotal === undefined ? '' : `; heap ${mib(m.heapTotal)} (${mib(m.heapUsed ?? 0)} used), external ${mib(m.external ?? 0)}, other anon ${mib(m.anon - m.heapTotal - (m.external ?? 0))}`;
  return `${mib(m.rss)} (anon ${mib(m.anon)}, file ${mib(m.file)}${heap})`;
}

function burstTable(title: string, before: Map<Daemon, Memory>, peak: Map<Daemon, Memory>, after: Map<Daemon, Memory>, fresh: Map<Daemon, Memory>, floor: Memory): void {
  const rows: [string, string][] = [];
  for (const name of DAEMONS) {
    rows.push([`${name} before`, breakdown(before.get(name)!)]);
    rows.push([`${name} peak`, breakdown(peak.get(name)!)]);
    const a = after.get(name)!;
    const aboveFresh = a.rss - fresh.get(name)!.rss;
    rows.push([`${name} quiet`, `${breakdown(a)}; ${aboveFresh >= 0 ? '+' : ''}${mib(aboveFresh)} on fresh`]);
  }
  rows.push(['floor: idle gRPC server in node', breakdown(floor)]);
  printTable(title, rows);
}

/** Distinct images: busybox's layers plus one of `layerBytes` incompressible bytes of their own. */
async function pushDistinctImages(h: RuntimeHarness, count: number, layerBytes: number): Promise<string[]> {
  const busybox = await getTestImage('busybox');
  if (busybox.kind !== 'image') throw new Error('busybox should be a single image');
  const blobDir = await makeTempDir('skiff-bench-bursts');
  const client = new RegistryClient(h.registry.url);
  const refs: string[] = [];
  try {
    for (let i = 0; i < count; i++) {
      const seed = `memory-bursts-${i}`;
      const own = await buildLayer([{ type: 'file', name: 'data.bin', content: { size: layerBytes, open: () => pseudoRandomStream(seed, layerBytes) } }], { blobDir });
      const image = await buildImage({ blobDir, layers: [...busybox.layers, own], config: { Cmd: ['sh'], Labels: { n: String(i) } } });
      await pushImage(h.registry, 'skiff/bursts', `n${i}`, image, { client });
      refs.push(`${h.registry.host}/skiff/bursts:n${i}`);
    }
  } finally {
    await removeDir(blobDir);
  }
  return refs;
}

async function podChurn(h: RuntimeHarness, count: number): Promise<void> {
  await inWaves(Array.from({ length: count }, (_, i) => i), 10, async (i) => {
    const pod = await h.runPod();
    await h.runContainer(pod, `app-${i}`, { command: ['sh', '-c', 'seq 1 2000; exec sleep 3600'] });
    await callUnary(h.runtime, 'StopPodSandbox', { pod_sandbox_id: pod.id }, { timeoutMs: 60_000 });
    await callUnary(h.runtime, 'RemovePodSandbox', { pod_sandbox_id: pod.id }, { timeoutMs: 60_000 });
  });
}

async function execSessions(h: RuntimeHarness, container: string, count: number): Promise<void> {
  await inWaves(Array.from({ length: count }, (_, i) => i), 10, async (i) => {
    const { url } = await callUnary(h.runtime, 'Exec', { container_id: container, cmd: ['echo', 'hi'], stdout: true, stderr: true });
    if (i % 2 === 0) await wsExec(url, 'v5.channel.k8s.io');
    else await spdyExec(url, ['v4.channel.k8s.io']);
  });
}

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      pulls: { type: 'string', default: '50' },
      pods: { type: 'string', default: '100' },
      execs: { type: 'string', default: '200' },
      'quiet-s': { type: 'string', default: '60' },
      'layer-mib': { type: 'string', default: '4' },
    },
  });
  const quietMs = Number(values['quiet-s']) * 1000;
  const h = await startRuntimeHarness({ images: ['busybox'], skiff: { logLevel: 'info' } });
  const floorDir = await makeTempDir('skiff-bench-floor');
  const floorServer = await startGrpcFloorServer(join(floorDir, 'floor.sock'));
  try {
    const refs = await pushDistinctImages(h, Number(values.pulls), Number(values['layer-mib']) * 1024 * 1024);
    const execPod = await h.runPod();
    const execContainer = await h.runContainer(execPod, 'exec-target');
    await new Promise((r) => setTimeout(r, SETTLE_MS));
    const daemons = await watchedDaemons(h);
    const fresh = await measureAll(daemons);
    const floor = await smapsRollup(floorServer.pid);
    printTable('Fresh, idle (one pod running, for the exec burst)', [...DAEMONS.map((n): [string, string] => [n, breakdown(fresh.get(n)!)]), ['floor: idle gRPC server in node', breakdown(floor)]]);

    const bursts: [string, () => Promise<void>][] = [
      [`${refs.length} pulls of distinct images, 5 at once`, () => inWaves(refs, 5, async (image) => void (await callUnary(h.images, 'PullImage', { image: { image } }, { timeoutMs: 300_000 })))],
      [`${values.pods} pods run and removed, 10 at once`, () => podChurn(h, Number(values.pods))],
      [`${values.execs} exec sessions, 10 at once`, () => execSessions(h, execContainer, Number(values.execs))],
    ];
    const summary: [string, string][] = [];
    for (const [title, burst] of bursts) {
      const before = await measureAll(daemons);
      const started = performance.now();
      const peak = await peaksDuring(daemons, burst);
      const took = performance.now() - started;
      await new Promise((r) => setTimeout(r, quietMs));
      const after = await measureAll(daemons);
      burstTable(`${title} (${(took / 1000).toFixed(1)} s): before, peak, ${quietMs / 1000} s after`, before, peak, after, fresh, await smapsRollup(floorServer.pid));
      for (const n of DAEMONS) summary.push([`${title.split(',')[0]}: ${n}`, `${mib(fresh.get(n)!.rss)} / ${mib(peak.get(n)!.rss)} / ${mib(after.get(n)!.rss)}`]);
    }
    printTable(`RSS fresh / peak / ${quietMs / 1000} s after, per burst (target: within 10 MiB of fresh)`, summary);
  } finally {
    floorServer.stop();
    await removeDir(floorDir);
    await h.stop();
  }
}

main().catch((err: unknown) => {
  process.stderr.write(`${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
  process.exit(1);
});
