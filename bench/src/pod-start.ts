/**
 * runtime-svc benchmark, through `skiff up` with busybox pulled from a local registry:
 *   - pod start (RunPodSandbox + CreateContainer + StartContainer) p50/p95, one at a time and
 *     10 at once, beside the floor measured in the same run: `runc run -d` of a bundle holding
 *     the same busybox rootfs, plus a CNI ADD of the same network configuration run by hand
 *     (for 10 at once: 10 of those started together, per pod and per wave);
 *   - the CNI cost as the runtime pays it: RunPodSandbox with a pod network minus hostNetwork;
 *   - RSS (and PSS) of every Skiff daemon (image, runtime, stream, logs) + every conmon with 0, 20 and 2N running pods,
 *     beside the memory floor: four idle bare node processes plus one idle conmon per conmon;
 *   - ListContainers p50/p99 with 500 containers (created, most of them not started), decoded
 *     as any client does and, beside it, left as bytes (server + transport alone);
 *   - pod start with a user namespace of its own beside the same pod without one;
 *   - pod start and memory per running pod under gVisor (handler "runsc") beside runc, when
 *     runsc is installed: memory as the PSS of the pods' own processes and their monitors.
 *
 *   node bench/dist/pod-start.js [--pods N] [--list M]
 */
import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { chmod, readdir, readFile, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { parseArgs, promisify } from 'node:util';
import { callUnary, type cri } from '@skiff/proto';
import { startRuntimeHarness, removeCgroupTree, type Pod, type RuntimeHarness, listConmonProcesses, makeTempDir } from '@skiff/e2e/lib';
import { cniAdd, cniDel, createNetns, idleNodeFloor, IDLE_NODE_SCRIPT, makeBundle, pssBytes, removeNetns, runcRunDetached, type Conflist } from './floors.js';
import { memoryRows, skiffMemory, type MemoryFigures } from './skiff-memory.js';
import { median, mib, ms, percentile, printTable, timed } from './stats.js';

const run = promisify(execFile);
const FLOOR_RUNS = 20;
const NETWORK_RUNS = 10;
const BATCH = 10;
const FLOOR_WAVES = 5;
const USERNS_RUNS = 10;
const USERNS_SIZE = 65536;
const RUNSC_RUNS = 10;
const RUNSC_MEMORY_PODS = 10;

// ---------------------------------------------------------------- listing

/**
 * ListContainers on the same channel, with the response kept as bytes: what the call costs
 * before this client's protobuf decoding, which in Node is a large share for a 500-entry reply.
 */
function listContainersUndecoded(h: RuntimeHarness): Promise<number> {
  return new Promise((resolve, reject) => {
    h.runtime.makeUnaryRequest(
      '/runtime.v1.RuntimeService/ListContainers',
      () => Buffer.alloc(0), // an empty ListContainersRequest
      (bytes: Buffer) => bytes,
      {},
      (err, bytes) => (err ? reject(err) : resolve(bytes?.length ?? 0)),
    );
  });
}

interface FloorWave {
  /** CNI ADD + `runc run -d`, for each pod of the wave. */
  perPod: number[];
  wall: number;
}

/**
 * The floor for pods started together: `bundles.length` CNI ADDs into fresh namespaces, each followed
 * by `runc run -d`, all at once. Namespaces are made before the clock starts, as in the one-at-a-time floor.
 */
async function floorWave(runcRoot: string, bundles: string[], net: Conflist, work: string, cgroupParent: string, started: string[]): Promise<FloorWave> {
  const pods = bundles.map((bundle, i) => ({ bundle, id: `bench-floor-wave-${i}-${randomBytes(4).toString('hex')}`, cniId: randomBytes(32).toString('hex'), netns: join(work, `netns-wave-${i}`), result: undefined as unknown }));
  await Promise.all(pods.map((pod) => createNetns(pod.netns)));
  const perPod: number[] = [];
  try {
    const wall = await timed(() =>
      Promise.all(
        pods.map(async (pod) =>
          perPod.push(
            await timed(async () => {
              pod.result = await cniAdd(net, pod.cniId, pod.netns);
              started.push(pod.id);
              await runcRunDetached(runcRoot, pod.bundle, pod.id, cgroupParent);
            }),
          ),
        ),
      ),
    );
    return { perPod, wall };
  } finally {
    for (const id of started.splice(0)) await run('runc', ['--root', runcRoot, 'delete', '--force', id]).catch(() => undefined);
    for (const pod of pods) {
      await cniDel(net, pod.cniId, pod.netns, pod.result).catch(() => undefined);
      await removeNetns(pod.netns);
    }
  }
}

// ---------------------------------------------------------------- pods

interface PodStart {
  pod: Pod;
  ms: number;
  /** RunPodSandbox, CreateContainer, StartContainer. */
  steps: [number, number, number];
}

async function startPod(h: RuntimeHarness, namespaces?: cri.NamespaceOption, handler = ''): Promise<PodStart> {
  let pod: Pod | undefined;
  let id = '';
  const security = namespaces ? { linux: { security_context: { namespace_options: namespaces } } } : {};
  const sandbox = await timed(async () => (pod = await h.runPod(security, handler)));
  const create = await timed(async () => (id = await h.createContainer(pod!, 'main', security)));
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

/**
 * The PSS of every process running pods: those in the pods' cgroups (pause processes, containers,
 * gVisor's sandbox and gofer processes), this instance's conmons and their children outside the
 * pods' cgroups (the holders of containers in a gVisor sandbox).
 */
async function podProcessesPss(h: RuntimeHarness): Promise<number> {
  const conmons = new Set((await listConmonProcesses(h.skiff.runDir)).map((c) => c.pid));
  let total = 0;
  for (const entry of await readdir('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    const pid = Number(entry);
    const [cgroup, stat] = await Promise.all([readFile(`/proc/${pid}/cgroup`, 'utf8').catch(() => ''), readFile(`/proc/${pid}/stat`, 'utf8').catch(() => '')]);
    const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
    if (cgroup.includes(`${h.cgroupParent}/`) || conmons.has(pid) || conmons.has(ppid)) total += await pssBytes(pid).catch(() => 0);
  }
  return total;
}

interface IsolationFigures {
  starts: Record<'runsc' | 'runc', PodStart[]>;
  /** Bytes of PSS per running pod. */
  perPod: Record<'runsc' | 'runc', number>;
}

/** Pod start under runsc and runc alternately, then the memory each level's running pods take. */
async function isolationLevels(h: RuntimeHarness): Promise<IsolationFigures> {
  const starts = { runsc: [] as PodStart[], runc: [] as PodStart[] };
  for (let i = 0; i < RUNSC_RUNS; i++) {
    for (const handler of ['runsc', 'runc'] as const) {
      const started = await startPod(h, undefined, handler === 'runc' ? '' : handler);
      starts[handler].push(started);
      await callUnary(h.runtime, 'RemovePodSandbox', { pod_sandbox_id: started.pod.id }, { timeoutMs: 60_000 });
    }
  }
  const perPod = { runsc: 0, runc: 0 };
  for (const handler of ['runsc', 'runc'] as const) {
    const before = await podProcessesPss(h);
    const running: Pod[] = [];
    for (let i = 0; i < RUNSC_MEMORY_PODS; i++) running.push((await startPod(h, undefined, handler === 'runc' ? '' : handler)).pod);
    await new Promise((r) => setTimeout(r, 1000));
    perPod[handler] = ((await podProcessesPss(h)) - before) / RUNSC_MEMORY_PODS;
    for (const pod of running) await callUnary(h.runtime, 'RemovePodSandbox', { pod_sandbox_id: pod.id }, { timeoutMs: 60_000 });
  }
  return { starts, perPod };
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
      netnsTimes.push(await timed(() => createNetns(netns)));
      let result: unknown;
      try {
        cniTimes.push(await timed(async () => (result = await cniAdd(conflist, id, netns))));
      } finally {
        await cniDel(conflist, id, netns, result);
        await removeNetns(netns);
      }
    }

    // Floor 3: the same, BATCH pods at once.
    const waveBundles = await Promise.all(Array.from({ length: BATCH }, (_, i) => makeBundle(join(work, `wave-${i}`), snapshot)));
    const floorWaves: FloorWave[] = [];
    for (let wave = 0; wave < FLOOR_WAVES; wave++) floorWaves.push(await floorWave(runcRoot, waveBundles, conflist, work, floorCgroup, floorIds));

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

    // A pod with its own user namespace beside the same pod without one, alternately.
    const usernsStarts = { userns: [] as PodStart[], host: [] as PodStart[] };
    await chmod(h.skiff.dir, 0o711);
    for (let i = 0; i < USERNS_RUNS; i++) {
      for (const kind of ['userns', 'host'] as const) {
        const hostId = 0x40000000 + i * USERNS_SIZE;
        const mapping = [{ host_id: hostId, container_id: 0, length: USERNS_SIZE }];
        const started = await startPod(h, kind === 'userns' ? { userns_options: { mode: 'POD', uids: mapping, gids: mapping } } : undefined);
        usernsStarts[kind].push(started);
        await callUnary(h.runtime, 'RemovePodSandbox', { pod_sandbox_id: started.pod.id }, { timeoutMs: 60_000 });
      }
    }

    const status = await callUnary(h.runtime, 'Status', {});
    const isolation = status.runtime_handlers.some((r) => r.name === 'runsc') ? await isolationLevels(h) : undefined;

    const idleNode = await idleNodeFloor();
    const memIdle = await skiffMemory(h);
    const pods: Pod[] = [];
    const sequentialStarts: PodStart[] = [];
    let mem20: MemoryFigures | undefined;
    for (let i = 0; i < podCount; i++) {
      const started = await startPod(h);
      sequentialStarts.push(started);
      pods.push(started.pod);
      if (pods.length === 20) mem20 = await skiffMemory(h);
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
    const memFull = await skiffMemory(h);

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
    const rawListTimes: number[] = [];
    for (let i = 0; i < 300; i++) {
      listTimes.push(await timed(() => callUnary(h.runtime, 'ListContainers', {})));
      rawListTimes.push(await timed(() => listContainersUndecoded(h)));
    }

    const floor = median(runcTimes);
    const cni = median(cniTimes);
    const cniInRuntime = median(sandboxTimes.network) - median(sandboxTimes.host);
    const floorPerPod = median(floorWaves.flatMap((w) => w.perPod));
    const floorWall = median(floorWaves.map((w) => w.wall));
    printTable('Floor, same machine, same run (median)', [
      [`runc run -d of the busybox rootfs (${FLOOR_RUNS} runs)`, ms(floor)],
      [`CNI ADD by hand: loopback + bridge/host-local + portmap (${FLOOR_RUNS} runs)`, ms(cni)],
      ['  network namespace creation (unshare --net=FILE)', ms(median(netnsTimes))],
      [`RunPodSandbox with a pod network / hostNetwork (${NETWORK_RUNS} each)`, `${ms(median(sandboxTimes.network))} / ${ms(median(sandboxTimes.host))}`],
      ['  CNI ADD and namespace as the runtime pays them (difference)', ms(cniInRuntime)],
      ['floor + CNI ADD', ms(floor + cni)],
      [`${BATCH} at once: CNI ADD + runc run -d each (${FLOOR_WAVES} waves), per pod`, ms(floorPerPod)],
      [`  wall time per wave of ${BATCH}`, ms(floorWall)],
    ]);
    printTable(`Pod start: RunPodSandbox + CreateContainer + StartContainer, busybox (target p50 <= 1.5 x (floor + CNI ADD) = ${ms(1.5 * (floor + cni))})`, [
      ...latencyRows(sequential).map(([k, v]): [string, string] => [`${podCount} pods one at a time, ${k}`, v]),
      [`  p50 / (floor + CNI ADD)`, (median(sequential) / (floor + cni)).toFixed(2)],
      stepRow('  steps (median)', sequentialStarts),
      ...latencyRows(concurrent).map(([k, v]): [string, string] => [`${podCount} pods ${BATCH} at once, ${k} per pod`, v]),
      [`  p50 / (floor ${BATCH} at once, per pod)`, (median(concurrent) / floorPerPod).toFixed(2)],
      stepRow('  steps (median)', concurrentStarts),
      [`  wall time per wave of ${BATCH} (median)`, ms(median(waves))],
      [`  wall time / (floor ${BATCH} at once, per wave)`, (median(waves) / floorWall).toFixed(2)],
      [`  pods per second, ${BATCH} at once`, (BATCH / (median(waves) / 1000)).toFixed(1)],
    ]);
    const usernsP50 = median(usernsStarts.userns.map((s) => s.ms));
    const hostP50 = median(usernsStarts.host.map((s) => s.ms));
    printTable(`User namespaces: pod start with hostUsers: false beside the same pod without (${USERNS_RUNS} each, alternately; target: at most 20 ms more at p50)`, [
      ['p50 with its own user namespace / without', `${ms(usernsP50)} / ${ms(hostP50)}`],
      ['  difference', ms(usernsP50 - hostP50)],
      stepRow('  steps with (median)', usernsStarts.userns),
      stepRow('  steps without (median)', usernsStarts.host),
    ]);
    if (isolation) {
      const p50 = (handler: 'runsc' | 'runc'): number => median(isolation.starts[handler].map((s) => s.ms));
      printTable(`gVisor: pod start under runsc beside runc (${RUNSC_RUNS} each, alternately), and memory per running pod (${RUNSC_MEMORY_PODS} pods each)`, [
        ['pod start p50 runsc / runc', `${ms(p50('runsc'))} / ${ms(p50('runc'))}`],
        stepRow('  steps runsc (median)', isolation.starts.runsc),
        stepRow('  steps runc (median)', isolation.starts.runc),
        ['  floor: runc run -d + CNI ADD by hand', ms(median(runcTimes) + median(cniTimes))],
        ['PSS per running pod (its processes, conmons and holders), runsc / runc', `${mib(isolation.perPod.runsc)} / ${mib(isolation.perPod.runc)}`],
      ]);
    } else {
      process.stdout.write('\n(runsc is not installed: no gVisor figures)\n');
    }
    printTable('Memory: every Skiff daemon + every conmon (target < 250 MB RSS at 100 pods)', [
      [`idle node (node -e '${IDLE_NODE_SCRIPT}'), same binary`, `${mib(idleNode.rss)} RSS; PSS ${mib(idleNode.pss)}`],
      [`one conmon (median, ${memFull.conmonCount} running)`, `${mib(memFull.oneConmon.rss)} RSS; PSS ${mib(memFull.oneConmon.pss)}`],
      ...memoryRows('0 pods', memIdle, idleNode),
      ...(mem20 ? memoryRows('20 running pods', mem20, idleNode) : []),
      ...memoryRows(`${pods.length} running pods`, memFull, idleNode),
    ]);
    printTable(`ListContainers with ${listed} containers (${pods.length} running, the rest created), 300 calls`, [
      ['p50 (target < 5 ms)', ms(percentile(listTimes, 50))],
      ['p99', ms(percentile(listTimes, 99))],
      ['p50 / p99 with the response left undecoded (server + transport)', `${ms(percentile(rawListTimes, 50))} / ${ms(percentile(rawListTimes, 99))}`],
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
