/**
 * runtime-svc benchmark, through `skiff up` with busybox pulled from a local registry:
 *   - pod start (RunPodSandbox + CreateContainer + StartContainer) p50/p95, one at a time and
 *     10 at once, beside the floor measured in the same run: `runc run -d` of a bundle holding
 *     the same busybox rootfs, plus a CNI ADD of the same network configuration run by hand;
 *   - the CNI cost as the runtime pays it: RunPodSandbox with a pod network minus hostNetwork;
 *   - RSS (and PSS) of every Skiff daemon (image, runtime, stream, logs) + every conmon with 0, 20 and 100 running pods;
 *   - ListContainers p50/p99 with 500 containers (created, most of them not started).
 *
 *   node bench/dist/pod-start.js [--pods N] [--list M]
 */
import { execFile, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { readFile, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { parseArgs, promisify } from 'node:util';
import { callUnary } from '@skiff/proto';
import { startRuntimeHarness, removeCgroupTree, type Pod, type RuntimeHarness } from '@skiff/e2e/dist/lib/runtime-harness.js';
import { listConmonProcesses } from '@skiff/e2e/dist/lib/runtime-inventory.js';
import { makeTempDir } from '@skiff/e2e/dist/lib/tmp.js';
import { median, mib, ms, percentile, printTable, rssBytes, timed } from './stats.js';

const run = promisify(execFile);
const CNI_BIN_DIRS = ['/opt/cni/bin', '/usr/lib/cni'];
const FLOOR_RUNS = 20;
const NETWORK_RUNS = 10;
const BATCH = 10;

// ---------------------------------------------------------------- memory

async function pssBytes(pid: number): Promise<number> {
  const text = await readFile(`/proc/${pid}/smaps_rollup`, 'utf8');
  const kb = /^Pss:\s+(\d+) kB$/m.exec(text)?.[1];
  return kb === undefined ? 0 : Number(kb) * 1024;
}

interface MemoryFigures {
  daemons: number;
  conmons: number;
  conmonCount: number;
  pss: number;
}

async function memory(h: RuntimeHarness): Promise<MemoryFigures> {
  const daemons: number[] = [];
  for (const name of ['image-svc', 'runtime-svc', 'stream-svc', 'logs-svc']) {
    const pid = await h.skiff.servicePid(name);
    if (pid === undefined) throw new Error(`no pid for ${name}`);
    daemons.push(pid);
  }
  const conmons = (await listConmonProcesses(h.skiff.runDir)).map((c) => c.pid);
  const sum = async (pids: number[], read: (pid: number) => Promise<number>): Promise<number> =>
    (await Promise.all(pids.map((pid) => read(pid).catch(() => 0)))).reduce((a, b) => a + b, 0);
  return {
    daemons: await sum(daemons, rssBytes),
    conmons: await sum(conmons, rssBytes),
    conmonCount: conmons.length,
    pss: await sum([...daemons, ...conmons], pssBytes),
  };
}

function memoryRow(label: string, m: MemoryFigures): [string, string] {
  return [label, `${mib(m.daemons + m.conmons)} RSS (daemons ${mib(m.daemons)}, ${m.conmonCount} conmons ${mib(m.conmons)}); PSS ${mib(m.pss)}`];
}

// ---------------------------------------------------------------- the floor: runc and CNI by hand

/** A bundle with a copy of the image's rootfs (read-only), `sleep 3600`, cgroups under `cgroupParent`. */
async function makeBundle(dir: string, snapshot: string): Promise<string> {
  const bundle = join(dir, 'bundle');
  await run('mkdir', ['-p', bundle]);
  await run('cp', ['-a', snapshot, join(bundle, 'rootfs')]);
  await run('runc', ['spec', '--bundle', bundle]);
  return bundle;
}

async function runcRunDetached(runcRoot: string, bundle: string, id: string, cgroupParent: string): Promise<void> {
  const specPath = join(bundle, 'config.json');
  const spec = JSON.parse(await readFile(specPath, 'utf8')) as {
    process: { terminal: boolean; args: string[] };
    root: { path: string; readonly: boolean };
    linux: { cgroupsPath?: string };
  };
  spec.process.terminal = false;
  spec.process.args = ['sleep', '3600'];
  spec.root = { path: 'rootfs', readonly: true };
  spec.linux.cgroupsPath = `${cgroupParent}/${id}`;
  await writeFile(specPath, JSON.stringify(spec));
  // Detached: the container keeps runc's stdio, so it must not be a pipe we wait on.
  await new Promise<void>((resolve, reject) => {
    const child = spawn('runc', ['--root', runcRoot, 'run', '-d', '--bundle', bundle, id], { stdio: 'ignore' });
    child.once('error', reject);
    child.once('exit', (code) => (code === 0 ? resolve() : reject(new Error(`runc run -d exited with ${code}`))));
  });
}

interface CniPlugin {
  type: string;
  capabilities?: Record<string, boolean>;
  [key: string]: unknown;
}

interface Conflist {
  cniVersion: string;
  name: string;
  plugins: CniPlugin[];
}

async function cniInvoke(command: 'ADD' | 'DEL', net: Conflist, plugin: CniPlugin, id: string, netns: string, ifName: string, prev: unknown): Promise<unknown> {
  const { capabilities: _capabilities, ...config } = plugin;
  const input = JSON.stringify({ ...config, cniVersion: net.cniVersion, name: net.name, ...(prev ? { prevResult: prev } : {}) });
  const env = { ...process.env, CNI_COMMAND: command, CNI_CONTAINERID: id, CNI_NETNS: netns, CNI_IFNAME: ifName, CNI_PATH: CNI_BIN_DIRS.join(':') };
  const binary = CNI_BIN_DIRS.map((d) => join(d, plugin.type)).find((p) => existsSync(p));
  if (binary === undefined) throw new Error(`no CNI plugin ${plugin.type} in ${CNI_BIN_DIRS.join(', ')}`);
  const stdout = await new Promise<string>((resolve, reject) => {
    const child = spawn(binary, [], { env, stdio: ['pipe', 'pipe', 'pipe'] });
    let out = '';
    child.stdout.on('data', (c: Buffer) => (out += c.toString()));
    child.once('error', reject);
    child.once('exit', (code) => (code === 0 ? resolve(out) : reject(new Error(`${plugin.type} ${command} exited with ${code}: ${out}`))));
    child.stdin.end(input);
  });
  return command === 'ADD' ? JSON.parse(stdout) : prev;
}

/** The loopback attachment and the pod network's plugin chain, as the runtime runs them. */
async function cniAdd(net: Conflist, id: string, netns: string): Promise<unknown> {
  await cniInvoke('ADD', { cniVersion: net.cniVersion, name: 'bench-loopback', plugins: [] }, { type: 'loopback' }, id, netns, 'lo', undefined);
  let prev: unknown;
  for (const plugin of net.plugins) prev = await cniInvoke('ADD', net, plugin, id, netns, 'eth0', prev);
  return prev;
}

async function cniDel(net: Conflist, id: string, netns: string, result: unknown): Promise<void> {
  for (const plugin of [...net.plugins].reverse()) await cniInvoke('DEL', net, plugin, id, netns, 'eth0', result);
}

// ---------------------------------------------------------------- pods

interface PodStart {
  pod: Pod;
  ms: number;
  /** RunPodSandbox, CreateContainer, StartContainer. */
  steps: [number, number, number];
}

async function startPod(h: RuntimeHarness): Promise<PodStart> {
  let pod: Pod | undefined;
  let id = '';
  const sandbox = await timed(async () => (pod = await h.runPod()));
  const create = await timed(async () => (id = await h.createContainer(pod!, 'main')));
  const start = await timed(() => callUnary(h.runtime, 'StartContainer', { container_id: id }, { timeoutMs: 60_000 }));
  return { pod: pod!, ms: sandbox + create + start, steps: [sandbox, create, start] };
}

function stepRow(label: string, starts: PodStart[]): [string, string] {
  const step = (i: 0 | 1 | 2): string => ms(median(starts.map((s) => s.steps[i])));
  return [label, `RunPodSandbox ${step(0)}, CreateContainer ${step(1)}, StartContainer ${step(2)}`];
}

function latencyRows(samples: number[]): [string, string][] {
  return [
    ['p50', ms(percentile(samples, 50))],
    ['p95', ms(percentile(samples, 95))],
  ];
}

async function main(): Promise<void> {
  const { values } = parseArgs({ options: { pods: { type: 'string', default: '50' }, list: { type: 'string', default: '500' } } });
  const podCount = Number(values.pods);
  const listTarget = Number(values.list);
  const h = await startRuntimeHarness({ images: ['busybox'] });
  const work = await makeTempDir('skiff-bench-pod');
  const runcRoot = join(work, 'runc');
  const floorCgroup = `/skiff-bench-floor-${process.pid}`;
  const floorIds: string[] = [];
  try {
    const image = h.imageRef('busybox');
    const { info } = await callUnary(h.images, 'ImageStatus', { image: { image }, verbose: true });
    const snapshot = (JSON.parse(info['info'] ?? '{}') as { snapshots: string[] }).snapshots[0]!;

    // Floor 1: runc run -d of the same rootfs.
    const bundle = await makeBundle(work, snapshot);
    const runcTimes: number[] = [];
    for (let i = 0; i < FLOOR_RUNS; i++) {
      const id = `bench-floor-${i}-${randomBytes(4).toString('hex')}`;
      floorIds.push(id);
      runcTimes.push(await timed(() => runcRunDetached(runcRoot, bundle, id, floorCgroup)));
    }
    for (const id of floorIds.splice(0)) await run('runc', ['--root', runcRoot, 'delete', '--force', id]);

    // Floor 2: a CNI ADD of the installed network (loopback + bridge + portmap) into a fresh namespace.
    const conflist = JSON.parse(await readFile(join(h.skiff.dir, 'cni', '10-skiff.conflist'), 'utf8')) as Conflist;
    const cniTimes: number[] = [];
    const netnsTimes: number[] = [];
    for (let i = 0; i < FLOOR_RUNS; i++) {
      const id = randomBytes(32).toString('hex');
      const netns = join(work, `netns-${i}`);
      await writeFile(netns, '');
      netnsTimes.push(await timed(() => run('unshare', [`--net=${netns}`, 'true'])));
      let result: unknown;
      try {
        cniTimes.push(await timed(async () => (result = await cniAdd(conflist, id, netns))));
      } finally {
        await cniDel(conflist, id, netns, result);
        await run('umount', [netns]);
        await rm(netns, { force: true });
      }
    }

    // The CNI cost inside the runtime: a pod sandbox with and without a network namespace of its own.
    const sandboxTimes = { network: [] as number[], host: [] as number[] };
    for (let i = 0; i < NETWORK_RUNS; i++) {
      for (const kind of ['network', 'host'] as const) {
        const overrides = kind === 'host' ? { hostname: '', linux: { security_context: { namespace_options: { network: 'NODE' as const } } } } : {};
        let pod: Pod | undefined;
        sandboxTimes[kind].push(await timed(async () => (pod = await h.runPod(overrides))));
        await callUnary(h.runtime, 'RemovePodSandbox', { pod_sandbox_id: pod!.id }, { timeoutMs: 60_000 });
      }
    }

    const memIdle = await memory(h);
    const pods: Pod[] = [];
    const sequentialStarts: PodStart[] = [];
    let mem20: MemoryFigures | undefined;
    for (let i = 0; i < podCount; i++) {
      const started = await startPod(h);
      sequentialStarts.push(started);
      pods.push(started.pod);
      if (pods.length === 20) mem20 = await memory(h);
    }
    const concurrentStarts: PodStart[] = [];
    const waves: number[] = [];
    for (let wave = 0; wave < podCount / BATCH; wave++) {
      waves.push(
        await timed(async () => {
          const started = await Promise.all(Array.from({ length: BATCH }, () => startPod(h)));
          concurrentStarts.push(...started);
          pods.push(...started.map((s) => s.pod));
        }),
      );
    }
    const sequential = sequentialStarts.map((s) => s.ms);
    const concurrent = concurrentStarts.map((s) => s.ms);
    const memFull = await memory(h);

    // ListContainers with `listTarget` containers: the running ones plus created ones spread over the pods.
    let count = pods.length;
    for (let i = 0; count < listTarget; i++) {
      const batch = Array.from({ length: Math.min(BATCH, listTarget - count) }, (_, j) => {
        const pod = pods[(i * BATCH + j) % pods.length]!;
        return h.createContainer(pod, `idle-${i}-${j}`);
      });
      count += (await Promise.all(batch)).length;
    }
    const listed = (await callUnary(h.runtime, 'ListContainers', {})).containers.length;
    const listTimes: number[] = [];
    for (let i = 0; i < 300; i++) listTimes.push(await timed(() => callUnary(h.runtime, 'ListContainers', {})));

    const floor = median(runcTimes);
    const cni = median(cniTimes);
    const cniInRuntime = median(sandboxTimes.network) - median(sandboxTimes.host);
    printTable('Floor, same machine, same run (median)', [
      [`runc run -d of the busybox rootfs (${FLOOR_RUNS} runs)`, ms(floor)],
      [`CNI ADD by hand: loopback + bridge/host-local + portmap (${FLOOR_RUNS} runs)`, ms(cni)],
      ['  network namespace creation (unshare --net=FILE)', ms(median(netnsTimes))],
      [`RunPodSandbox with a pod network / hostNetwork (${NETWORK_RUNS} each)`, `${ms(median(sandboxTimes.network))} / ${ms(median(sandboxTimes.host))}`],
      ['  CNI ADD and namespace as the runtime pays them (difference)', ms(cniInRuntime)],
      ['floor + CNI ADD', ms(floor + cni)],
    ]);
    printTable(`Pod start: RunPodSandbox + CreateContainer + StartContainer, busybox (target p50 <= 1.5 x (floor + CNI ADD) = ${ms(1.5 * (floor + cni))})`, [
      ...latencyRows(sequential).map(([k, v]): [string, string] => [`${podCount} pods one at a time, ${k}`, v]),
      [`  p50 / (floor + CNI ADD)`, (median(sequential) / (floor + cni)).toFixed(2)],
      stepRow('  steps (median)', sequentialStarts),
      ...latencyRows(concurrent).map(([k, v]): [string, string] => [`${podCount} pods ${BATCH} at once, ${k} per pod`, v]),
      stepRow('  steps (median)', concurrentStarts),
      [`  wall time per wave of ${BATCH} (median)`, ms(median(waves))],
      [`  pods per second, ${BATCH} at once`, (BATCH / (median(waves) / 1000)).toFixed(1)],
    ]);
    printTable('Memory: every Skiff daemon + every conmon (target < 250 MB RSS at 100 pods)', [
      memoryRow('0 pods', memIdle),
      ...(mem20 ? [memoryRow('20 running pods', mem20)] : []),
      memoryRow(`${pods.length} running pods`, memFull),
    ]);
    printTable(`ListContainers with ${listed} containers (${pods.length} running, the rest created), 300 calls`, [
      ['p50 (target < 5 ms)', ms(percentile(listTimes, 50))],
      ['p99', ms(percentile(listTimes, 99))],
    ]);
  } finally {
    for (const id of floorIds) await run('runc', ['--root', runcRoot, 'delete', '--force', id]).catch(() => undefined);
    await removeCgroupTree(floorCgroup);
    const cleanup = Date.now();
    await h.stop();
    process.stdout.write(`\n(cleanup: ${Math.round((Date.now() - cleanup) / 1000)} s)\n`);
    await rm(work, { recursive: true, force: true });
  }
}

main().catch((err: unknown) => {
  process.stderr.write(`${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
  process.exit(1);
});
