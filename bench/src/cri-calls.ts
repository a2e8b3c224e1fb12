/**
 * Every CRI call a pod's life makes (and ExecSync, as an exec probe makes it), timed one at a time
 * through `skiff up` with busybox from a local registry: p50/p90/p99 over 100 samples of each pod
 * and container call and 50 of each image call, beside, in the same run,
 *   - the client's own floor: Version (no work in the server) through the same client, and the status
 *     and list calls again with the response left undecoded, and through a bare HTTP/2 client
 *     (h2-client.ts) beside Version and a grpc-js server doing nothing through it;
 *   - the floor of each step done by hand: runc create/start/exec/kill/delete of a bundle of the busybox
 *     rootfs, CNI ADD/DEL of the installed network into a fresh namespace, overlay mount/umount of
 *     the image's layer, a record's crash-safe write, rm of a container's directories, `skopeo copy` of
 *     the pulled images;
 *   - the idle footprint (RSS and PSS of the supervisor and the four daemons, no pods) beside as
 *     many idle `node` processes.
 *
 *   node bench/dist/cri-calls.js [--samples N] [--image-samples M] [--pulls K] [--images-only | --runtime-only] [--steps] [--pod-pid POD|CONTAINER] [--pause-every-pod]
 *
 * --images-only: the image calls alone (PullImage, ImageStatus, ListImages, RemoveImage) with their
 * client cost and floors. --runtime-only: the pod and container calls alone with their floors.
 * --steps: the services log at debug level, and where each pod and container call's time went is
 * printed too: the median of every step of runtime-svc's step log for the measured calls (the log
 * line per call adds a little to every figure, so the figures to compare come from runs without).
 * --pod-pid: the pods' PID namespace mode: POD (the default; one PID namespace for the pod, so a
 * pause process) or CONTAINER (the kubelet's default pod: a PID namespace per container, no pause).
 * --pause-every-pod: runtime.pause_every_pod = true, a pause for every pod (as before pods could
 * go without one).
 */
import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdir, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { parseArgs, promisify } from 'node:util';
import type { Client } from '@grpc/grpc-js';
import { atomicWriteJson } from '@skiff/common';
import { callUnary, type ImageServiceClient, type RuntimeServiceClient } from '@skiff/proto';
import { buildImage, buildLayer, imageCacheDir, makeTempDir, pushImage, pushTestImage, removeCgroupTree, startRuntimeHarness, type PushedImage, type RuntimeHarness } from '@skiff/e2e/lib';
import { BareHttp2Client } from './h2-client.js';
import { curlAndExtract, curlBlobs, curlVerifyAndExtract, indexCommit, prepareIndexDir, registryBlobs } from './image-floors.js';
import { cniAdd, cniDel, createNetns, IDLE_NODE_SCRIPT, makeBundle, pssBytes, removeNetns, runc, runcDetached, startGrpcFloorServer, writeSleepSpec, type Conflist } from './floors.js';
import { mib, percentile, rssBytes } from './stats.js';
import { logEntries, stepMedians } from './step-log.js';

const run = promisify(execFile);

/** p50 targets in ms, from the comparison with containerd 1.6 on this VM class. */
const TARGETS: Record<string, string> = {
  RunPodSandbox: '≤ 50',
  PodSandboxStatus: '≤ 0.8',
  StopPodSandbox: '≤ 50',
  RemovePodSandbox: '≤ 10',
  CreateContainer: '≤ 8.8',
  StartContainer: '≤ 55',
  ContainerStatus: '≤ 0.8',
  StopContainer: '≤ 14.9',
  RemoveContainer: '≤ 3',
  'PullImage busybox': '≤ 60',
  'PullImage 5x20 MiB': '≤ 500',
  ImageStatus: '≤ 0.44',
  RemoveImage: '≤ 4',
  ListImages: '≤ 0.25',
  "one pod's life": '≤ 180',
};

// ---------------------------------------------------------------- samples and the table

class Samples {
  private readonly rows = new Map<string, number[]>();
  add(name: string, value: number): void {
    let list = this.rows.get(name);
    if (list === undefined) this.rows.set(name, (list = []));
    list.push(value);
  }
  get(name: string): number[] {
    return this.rows.get(name) ?? [];
  }
  async time<T>(name: string, operation: () => Promise<T>): Promise<T> {
    const start = process.hrtime.bigint();
    const value = await operation();
    this.add(name, Number(process.hrtime.bigint() - start) / 1e6);
    return value;
  }
}

function fmt(value: number): string {
  if (!Number.isFinite(value)) return '-';
  return value < 10 ? value.toFixed(2) : value.toFixed(1);
}

function pcts(samples: number[]): string[] {
  return samples.length === 0 ? ['-', '-', '-'] : [50, 90, 99].map((p) => fmt(percentile(samples, p)));
}

function p50(samples: number[]): string {
  return samples.length === 0 ? '-' : fmt(percentile(samples, 50));
}

function printColumns(title: string, header: string[], rows: string[][]): void {
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? '').length)));
  const line = (cells: string[]): string => cells.map((c, i) => (i === 0 ? c.padEnd(widths[i]!) : c.padStart(widths[i]!))).join('  ');
  process.stdout.write(`\n${title}\n${'-'.repeat(title.length)}\n${line(header)}\n`);
  for (const row of rows) process.stdout.write(`${line(row)}\n`);
}

// ---------------------------------------------------------------- the client's floor

interface MethodDefinition {
  path: string;
  requestSerialize: (request: unknown) => Buffer;
  responseDeserialize: (bytes: Buffer) => unknown;
}

function methodOf(client: Client, method: string): MethodDefinition {
  const definition = (client.constructor as unknown as { service: Record<string, MethodDefinition> }).service[method];
  if (definition === undefined) throw new Error(`no method ${method}`);
  return definition;
}

/** The same RPC with the response kept as bytes: the call without this client's protobuf decoding. */
function undecoded(client: Client, method: string, request: unknown): Promise<Buffer> {
  const definition = methodOf(client, method);
  return new Promise((resolve, reject) => {
    client.makeUnaryRequest(definition.path, definition.requestSerialize, (bytes: Buffer) => bytes, request, (err, bytes) =>
      err ? reject(err) : resolve(bytes ?? Buffer.alloc(0)),
    );
  });
}

/** The same RPC through a bare HTTP/2 client (see h2-client.ts), its response left undecoded. */
function bareCall(bare: BareHttp2Client, client: Client, method: string, request: unknown): Promise<Buffer> {
  const definition = methodOf(client, method);
  return bare.call(definition.path, definition.requestSerialize(request));
}

/** The client's protobuf decoding of a response alone, in ms (no call). */
function decodeMs(client: Client, method: string, bytes: Buffer): number {
  const { responseDeserialize } = methodOf(client, method);
  const start = process.hrtime.bigint();
  responseDeserialize(bytes);
  return Number(process.hrtime.bigint() - start) / 1e6;
}

// ---------------------------------------------------------------- floors by hand

async function floorSteps(h: RuntimeHarness, samples: Samples, work: string, snapshot: string, lowerDirs: string[], runs: number): Promise<void> {
  const runcRoot = join(work, 'runc');
  const cgroup = `/skiff-bench-calls-${process.pid}`;
  const bundle = await makeBundle(work, snapshot);
  const conflist = JSON.parse(await readFile(join(h.skiff.dir, 'cni', '10-skiff.conflist'), 'utf8')) as Conflist;
  try {
    for (let i = 0; i < runs; i++) {
      const id = `bench-calls-${i}-${randomBytes(4).toString('hex')}`;
      await writeSleepSpec(bundle, id, cgroup);
      try {
        await samples.time('runc create', () => runcDetached(runcRoot, 'create', bundle, id));
        await samples.time('runc start', () => runc(runcRoot, ['start', id]));
        await samples.time('runc exec', () => runc(runcRoot, ['exec', id, 'true']));
        await samples.time('runc kill', () => runc(runcRoot, ['kill', id, 'KILL']));
        // `runc delete` refuses a container that is still stopping; its state is read until stopped.
        await waitStopped(runcRoot, id);
        await samples.time('runc delete', () => runc(runcRoot, ['delete', id]));
      } catch (err) {
        await runc(runcRoot, ['delete', '--force', id]).catch(() => undefined);
        throw err;
      }

      const netns = join(work, `netns-${i}`);
      const cniId = randomBytes(32).toString('hex');
      await createNetns(netns);
      let result: unknown;
      try {
        result = await samples.time('CNI ADD', () => cniAdd(conflist, cniId, netns));
        await samples.time('CNI DEL', () => cniDel(conflist, cniId, netns, result));
      } finally {
        await removeNetns(netns);
      }

      // A container's overlay and directories as the runtime lays them out: bundle + spec, upper, work, merged.
      const dir = join(work, `container-${i}`);
      const [upper, workDir, merged] = ['upper', 'work', 'merged'].map((d) => join(dir, d)) as [string, string, string];
      await Promise.all([upper, workDir, merged].map((d) => mkdir(d, { recursive: true })));
      await writeFile(join(dir, 'config.json'), await readFile(join(bundle, 'config.json')));
      await writeFile(join(upper, 'written'), 'x');
      const options = `lowerdir=${lowerDirs.join(':')},upperdir=${upper},workdir=${workDir}`;
      await samples.time('overlay mount', () => run('mount', ['-t', 'overlay', 'overlay', '-o', options, merged]));
      // A container record's crash-safe write (temp file, fsync, rename, fsync of the directory), of its size.
      const record = { id: cniId, labels: Object.fromEntries(Array.from({ length: 20 }, (_, n) => [`label-${n}`, randomBytes(24).toString('hex')])) };
      await samples.time('record write', () => atomicWriteJson(join(dir, 'container.json'), record));
      await samples.time('overlay umount', () => run('umount', [merged]));
      await samples.time("rm of a container's directories", () => rm(dir, { recursive: true, force: true }));
    }
  } finally {
    await removeCgroupTree(cgroup);
  }
}

async function waitStopped(runcRoot: string, id: string): Promise<void> {
  for (let i = 0; i < 200; i++) {
    const { stdout } = await run('runc', ['--root', runcRoot, 'state', id]);
    if ((JSON.parse(stdout) as { status: string }).status === 'stopped') return;
    await new Promise((r) => setTimeout(r, 5));
  }
  throw new Error(`runc container ${id} did not stop`);
}

// ---------------------------------------------------------------- the calls

type PodPid = 'POD' | 'CONTAINER';
let podPid: PodPid = 'POD';

/** The pod's and its container's namespace options for --pod-pid. */
function pidOptions(): { linux: { security_context: { namespace_options: { pid: PodPid } } } } {
  return { linux: { security_context: { namespace_options: { pid: podPid } } } };
}

async function podCalls(h: RuntimeHarness, samples: Samples, runs: number, bare: BareHttp2Client): Promise<void> {
  const rt = h.runtime;
  for (let i = 0; i < runs; i++) {
    const config = h.podConfig(pidOptions());
    const { pod_sandbox_id: podId } = await samples.time('RunPodSandbox', () => callUnary(rt, 'RunPodSandbox', { config }, { timeoutMs: 60_000 }));
    await samples.time('PodSandboxStatus', () => callUnary(rt, 'PodSandboxStatus', { pod_sandbox_id: podId }));
    await samples.time('PodSandboxStatus undecoded', () => undecoded(rt, 'PodSandboxStatus', { pod_sandbox_id: podId }));
    await samples.time('PodSandboxStatus, bare HTTP/2 client', () => bareCall(bare, rt, 'PodSandboxStatus', { pod_sandbox_id: podId }));
    const request = { pod_sandbox_id: podId, config: h.containerConfig('main', pidOptions()), sandbox_config: config };
    const { container_id: id } = await samples.time('CreateContainer', () => callUnary(rt, 'CreateContainer', request, { timeoutMs: 60_000 }));
    await samples.time('StartContainer', () => callUnary(rt, 'StartContainer', { container_id: id }, { timeoutMs: 60_000 }));
    await samples.time('ContainerStatus', () => callUnary(rt, 'ContainerStatus', { container_id: id }));
    await samples.time('ContainerStatus undecoded', () => undecoded(rt, 'ContainerStatus', { container_id: id }));
    await samples.time('ContainerStatus, bare HTTP/2 client', () => bareCall(bare, rt, 'ContainerStatus', { container_id: id }));
    await samples.time('ExecSync', () => callUnary(rt, 'ExecSync', { container_id: id, cmd: ['true'], timeout: 10 }, { timeoutMs: 60_000 }));
    // `sleep` as PID 1 ignores SIGTERM: timeout 0 kills it at once, as kubelet does after its grace period.
    await samples.time('StopContainer', () => callUnary(rt, 'StopContainer', { container_id: id, timeout: 0 }, { timeoutMs: 60_000 }));
    await samples.time('RemoveContainer', () => callUnary(rt, 'RemoveContainer', { container_id: id }, { timeoutMs: 60_000 }));
    await samples.time('StopPodSandbox', () => callUnary(rt, 'StopPodSandbox', { pod_sandbox_id: podId }, { timeoutMs: 60_000 }));
    await samples.time('RemovePodSandbox', () => callUnary(rt, 'RemovePodSandbox', { pod_sandbox_id: podId }, { timeoutMs: 60_000 }));
    await samples.time('Version', () => callUnary(rt, 'Version', {}));
    await samples.time('Version undecoded', () => undecoded(rt, 'Version', {}));
    await samples.time('Version, bare HTTP/2 client', () => bareCall(bare, rt, 'Version', {}));
  }
}

/** RunPodSandbox + CreateContainer + StartContainer + StopPodSandbox + RemovePodSandbox, the container still running at the stop. */
async function podLives(h: RuntimeHarness, samples: Samples, runs: number): Promise<void> {
  const rt: RuntimeServiceClient = h.runtime;
  for (let i = 0; i < runs; i++) {
    await samples.time("one pod's life", async () => {
      const config = h.podConfig(pidOptions());
      const { pod_sandbox_id: podId } = await callUnary(rt, 'RunPodSandbox', { config }, { timeoutMs: 60_000 });
      const request = { pod_sandbox_id: podId, config: h.containerConfig('main', pidOptions()), sandbox_config: config };
      const { container_id: id } = await callUnary(rt, 'CreateContainer', request, { timeoutMs: 60_000 });
      await callUnary(rt, 'StartContainer', { container_id: id }, { timeoutMs: 60_000 });
      await callUnary(rt, 'StopPodSandbox', { pod_sandbox_id: podId }, { timeoutMs: 60_000 });
      await callUnary(rt, 'RemovePodSandbox', { pod_sandbox_id: podId }, { timeoutMs: 60_000 });
    });
  }
}

/**
 * Image calls with a handful of images in the store. The pulled busybox is the only image holding
 * its layer (the runtime's busybox is removed first), so each pull downloads and unpacks it again.
 * Beside them, in the same run: the client's own cost (Version on the runtime socket, the responses
 * left undecoded, and their decoding alone), and the floors by hand (curl of the blobs, `curl | tar
 * -x` + `sync -f` without and with each layer's digest and diff ID verified on the way, `skopeo
 * copy`, a crash-safe index file replacement).
 */
async function imageCalls(h: RuntimeHarness, samples: Samples, work: string, runs: number, pulls: number): Promise<void> {
  const images = h.images;
  await callUnary(images, 'RemoveImage', { image: { image: h.imageRef('busybox') } });
  // Four small images with layers of their own, so ListImages has a handful to list.
  for (let i = 0; i < 4; i++) {
    const blobDir = join(imageCacheDir(), 'blobs');
    const layer = await buildLayer([{ type: 'file', name: `handful-${i}`, mode: 0o644, content: `image ${i}\n` }], { blobDir });
    const image = await buildImage({ blobDir, layers: [layer], config: { Cmd: ['sh'] } });
    await pushImage(h.registry, 'skiff/handful', `n${i}`, image);
    await callUnary(images, 'PullImage', { image: { image: `${h.registry.host}/skiff/handful:n${i}` } }, { timeoutMs: 60_000 });
  }
  const busybox = await pushTestImage(h.registry, 'busybox', { repo: 'skiff/pull-busybox' });
  const spec = { image: busybox.reference };
  const indexDir = join(work, 'index-floor');
  await prepareIndexDir(indexDir);
  // Warm-up: connections, lazy loads and JIT on both sides (the kubelet asks for image status all
  // the time, so the read calls are measured warm).
  for (let i = 0; i < 3; i++) {
    await callUnary(images, 'PullImage', { image: spec }, { timeoutMs: 120_000 });
    await callUnary(images, 'RemoveImage', { image: spec });
  }
  await callUnary(images, 'PullImage', { image: spec }, { timeoutMs: 120_000 });
  const floorSocket = join(work, 'grpc-floor.sock');
  const floorServer = await startGrpcFloorServer(floorSocket, {
    status: await callUnary(images, 'ImageStatus', { image: spec }),
    list: await callUnary(images, 'ListImages', {}),
  });
  const imagesBare = new BareHttp2Client(h.skiff.imageSocket);
  const floorBare = new BareHttp2Client(floorSocket);
  try {
    for (let i = 0; i < READ_WARMUP_CALLS; i++) {
      await callUnary(images, 'ImageStatus', { image: spec });
      await callUnary(images, 'ListImages', {});
      await bareCall(imagesBare, images, 'ImageStatus', { image: spec });
      await bareCall(floorBare, images, 'ImageStatus', { image: spec });
      await callUnary(h.runtime, 'Version', {});
      await callUnary(floorServer.client, 'ImageStatus', { image: spec });
      await callUnary(floorServer.client, 'ListImages', {});
    }
    await callUnary(images, 'RemoveImage', { image: spec });
    await timedImageCalls(h, samples, spec, { client: floorServer.client, bare: floorBare }, indexDir, runs, imagesBare);
  } finally {
    imagesBare.close();
    floorBare.close();
    floorServer.stop();
  }
  await pullFloors(h, samples, busybox, work, runs, pulls);
}

const READ_WARMUP_CALLS = 300;

async function timedImageCalls(
  h: RuntimeHarness,
  samples: Samples,
  spec: { image: string },
  floor: { client: ImageServiceClient; bare: BareHttp2Client },
  indexDir: string,
  runs: number,
  bare: BareHttp2Client,
): Promise<void> {
  const images = h.images;
  const other = { image: `${h.registry.host}/skiff/handful:n0` };
  for (let i = 0; i < runs; i++) {
    await samples.time('PullImage busybox', () => callUnary(images, 'PullImage', { image: spec }, { timeoutMs: 120_000 }));
    // The first status of a new image (as the kubelet asks right after its pull), through each client
    // in turn; and, as a control, the first call after the pull being another image's status.
    if (i % 3 === 0) await samples.time('ImageStatus, first after PullImage', () => callUnary(images, 'ImageStatus', { image: spec }));
    else if (i % 3 === 1) await samples.time('ImageStatus, first after PullImage, bare HTTP/2 client', () => bareCall(bare, images, 'ImageStatus', { image: spec }));
    else {
      await samples.time("another image's ImageStatus, first after PullImage", () => callUnary(images, 'ImageStatus', { image: other }));
      await samples.time('ImageStatus, second after PullImage', () => callUnary(images, 'ImageStatus', { image: spec }));
    }
    await samples.time('ImageStatus', () => callUnary(images, 'ImageStatus', { image: spec }));
    const status = await samples.time('ImageStatus undecoded', () => undecoded(images, 'ImageStatus', { image: spec }));
    samples.add('ImageStatus decode', decodeMs(images, 'ImageStatus', status));
    await samples.time('ListImages', () => callUnary(images, 'ListImages', {}));
    const list = await samples.time('ListImages undecoded', () => undecoded(images, 'ListImages', {}));
    samples.add('ListImages decode', decodeMs(images, 'ListImages', list));
    await samples.time('ImageStatus, bare HTTP/2 client', () => bareCall(bare, images, 'ImageStatus', { image: spec }));
    await samples.time('ListImages, bare HTTP/2 client', () => bareCall(bare, images, 'ListImages', {}));
    await samples.time('Version (runtime socket)', () => callUnary(h.runtime, 'Version', {}));
    // The index by hand is as big as the store's images.json with the same images.
    const indexBytes = (await stat(join(h.skiff.root, 'images', 'images.json'))).size;
    await samples.time('index commit by hand', () => indexCommit(indexDir, indexBytes));
    await samples.time('RemoveImage', () => callUnary(images, 'RemoveImage', { image: spec }));
    await samples.time('ImageStatus, grpc-js server doing nothing', () => callUnary(floor.client, 'ImageStatus', { image: spec }));
    await samples.time('ListImages, grpc-js server doing nothing', () => callUnary(floor.client, 'ListImages', {}));
    await samples.time('ImageStatus, grpc-js server doing nothing, bare HTTP/2 client', () => bareCall(floor.bare, images, 'ImageStatus', { image: spec }));
    await samples.time('ListImages, grpc-js server doing nothing, bare HTTP/2 client', () => bareCall(floor.bare, images, 'ListImages', {}));
  }
}

async function pullFloors(h: RuntimeHarness, samples: Samples, busybox: PushedImage, work: string, runs: number, pulls: number): Promise<void> {
  const images = h.images;
  const skopeo = (reference: string, name: string, i: number): Promise<unknown> =>
    run('skopeo', ['copy', '--quiet', '--src-tls-verify=false', `docker://${reference}`, `oci:${join(work, `oci-${name}-${i}`)}:x`]);
  const busyboxBlobs = await registryBlobs(h.registry.url, busybox.repo, 'busybox');
  for (let i = 0; i < Math.min(runs, 10); i++) {
    await samples.time('skopeo copy busybox', () => skopeo(busybox.reference, 'busybox', i));
    await samples.time('curl busybox', () => curlBlobs(busyboxBlobs, join(work, 'curl')));
    await samples.time('curl | tar -x busybox', () => curlAndExtract(busyboxBlobs, join(work, 'extract')));
    await samples.time('curl | tar -x, verified, busybox', () => curlVerifyAndExtract(busyboxBlobs, join(work, 'extract')));
  }
  const big = await pushTestImage(h.registry, 'pull5x20');
  const bigBlobs = await registryBlobs(h.registry.url, big.repo, 'pull5x20');
  for (let i = 0; i < pulls; i++) {
    await samples.time('PullImage 5x20 MiB', () => callUnary(images, 'PullImage', { image: { image: big.reference } }, { timeoutMs: 300_000 }));
    await callUnary(images, 'RemoveImage', { image: { image: big.reference } });
    await samples.time('skopeo copy 5x20 MiB', () => skopeo(big.reference, 'big', i));
    await rm(join(work, `oci-big-${i}`), { recursive: true, force: true });
    await samples.time('curl 5x20 MiB', () => curlBlobs(bigBlobs, join(work, 'curl')));
    await samples.time('curl | tar -x 5x20 MiB', () => curlAndExtract(bigBlobs, join(work, 'extract')));
    await samples.time('curl | tar -x, verified, 5x20 MiB', () => curlVerifyAndExtract(bigBlobs, join(work, 'extract')));
  }
}

/** The image rows: each call beside the client's own cost and the floors by hand, all from this run. */
function printImageRows(samples: Samples, runs: number, pulls: number): void {
  const s = (name: string): number[] => samples.get(name);
  const all = (name: string): string => s(name).map(fmt).join(' / ');
  const version = `Version ${p50(s('Version (runtime socket)'))}`;
  const rows: [string, number[], string, string][] = [
    ['PullImage busybox', s('PullImage busybox'), version, `curl ${p50(s('curl busybox'))}; curl | tar -x + sync ${p50(s('curl | tar -x busybox'))}, verified ${p50(s('curl | tar -x, verified, busybox'))}; skopeo copy ${p50(s('skopeo copy busybox'))}`],
    ['PullImage 5x20 MiB', s('PullImage 5x20 MiB'), version, `curl ${all('curl 5x20 MiB')}; curl | tar -x + sync ${all('curl | tar -x 5x20 MiB')}, verified ${all('curl | tar -x, verified, 5x20 MiB')}; skopeo copy ${all('skopeo copy 5x20 MiB')}`],
    ['ImageStatus', s('ImageStatus'), `${version}; undecoded ${p50(s('ImageStatus undecoded'))}; decode alone ${p50(s('ImageStatus decode'))}`, `grpc-js server doing nothing ${p50(s('ImageStatus, grpc-js server doing nothing'))}`],
    ['ImageStatus, first after PullImage', s('ImageStatus, first after PullImage'), version, `the next ImageStatus: the row above`],
    ["another image's ImageStatus, first after PullImage", s("another image's ImageStatus, first after PullImage"), version, 'any first call after a pull'],
    ['ImageStatus, second after PullImage', s('ImageStatus, second after PullImage'), version, "the new image's status after the call above"],
    ['RemoveImage', s('RemoveImage'), version, `index write + fsync + rename + fsync dir ${p50(s('index commit by hand'))}`],
    ['ListImages', s('ListImages'), `${version}; undecoded ${p50(s('ListImages undecoded'))}; decode alone ${p50(s('ListImages decode'))}`, `grpc-js server doing nothing ${p50(s('ListImages, grpc-js server doing nothing'))}`],
    ['ImageStatus, bare HTTP/2 client', s('ImageStatus, bare HTTP/2 client'), '', `grpc-js server doing nothing ${p50(s('ImageStatus, grpc-js server doing nothing, bare HTTP/2 client'))}`],
    ['ImageStatus, first after PullImage, bare HTTP/2 client', s('ImageStatus, first after PullImage, bare HTTP/2 client'), '', `ImageStatus through it, steady: the row above`],
    ['ListImages, bare HTTP/2 client', s('ListImages, bare HTTP/2 client'), '', `grpc-js server doing nothing ${p50(s('ListImages, grpc-js server doing nothing, bare HTTP/2 client'))}`],
  ];
  printColumns(
    `Image calls one at a time (${runs} samples per call, ${pulls} pulls of 5x20 MiB), ms`,
    ['call', 'n', 'p50', 'p90', 'p99', 'client cost p50', 'target p50', 'floor by hand, same run, p50'],
    rows.map(([name, list, client, floor]) => [name, String(list.length), ...pcts(list), client, TARGETS[name.split(',')[0]!] ?? '', floor]),
  );
  const floorNames = ['Version (runtime socket)', 'ImageStatus, grpc-js server doing nothing', 'ListImages, grpc-js server doing nothing', 'ImageStatus undecoded', 'ImageStatus decode', 'ListImages undecoded', 'ListImages decode', 'index commit by hand', 'curl busybox', 'curl | tar -x busybox', 'curl | tar -x, verified, busybox', 'skopeo copy busybox', 'curl 5x20 MiB', 'curl | tar -x 5x20 MiB', 'curl | tar -x, verified, 5x20 MiB', 'skopeo copy 5x20 MiB'];
  printColumns('Client cost and image floors, same run, ms', ['step', 'n', 'p50', 'p90', 'p99'], floorNames.map((name) => [name, String(s(name).length), ...pcts(s(name))]));
}


// ---------------------------------------------------------------- idle footprint

interface Footprint {
  rows: string[][];
  rss: number;
  pss: number;
  floorRss: number;
  floorPss: number;
}

async function parentPid(pid: number): Promise<number> {
  const stat = await readFile(`/proc/${pid}/stat`, 'utf8');
  return Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
}

async function idleFootprint(h: RuntimeHarness): Promise<Footprint> {
  const pids: [string, number][] = [];
  for (const name of ['image-svc', 'runtime-svc', 'stream-svc', 'logs-svc']) {
    const pid = await h.skiff.servicePid(name);
    if (pid === undefined) throw new Error(`no pid for ${name}`);
    pids.push([name, pid]);
  }
  pids.unshift(['supervisor (skiff up)', await parentPid(pids[0]![1])]);
  const { spawn } = await import('node:child_process');
  const nodes = pids.map(() => spawn(process.execPath, ['-e', IDLE_NODE_SCRIPT], { stdio: 'ignore' }));
  try {
    await new Promise((r) => setTimeout(r, 2000));
    const rows: string[][] = [];
    let rss = 0;
    let pss = 0;
    for (const [name, pid] of pids) {
      const [r, p] = [await rssBytes(pid), await pssBytes(pid)];
      rss += r;
      pss += p;
      rows.push([name, mib(r), mib(p)]);
    }
    let floorRss = 0;
    let floorPss = 0;
    for (const child of nodes) {
      floorRss += await rssBytes(child.pid!);
      floorPss += await pssBytes(child.pid!);
    }
    return { rows, rss, pss, floorRss, floorPss };
  } finally {
    for (const child of nodes) child.kill('SIGKILL');
  }
}

// ---------------------------------------------------------------- where the time went

interface CallDoneLine {
  msg?: string;
  service?: string;
  method?: string;
  ms?: number;
}

/**
 * The median of image-svc's own time for each call (from the start of its handler to its answer,
 * as its "call done" debug line says), with an ImageStatus that came right after a PullImage
 * counted apart: the kubelet asks for the new image's status at once.
 */
function imageCallMedians(output: string): string[][] {
  const byCall = new Map<string, number[]>();
  let previous: string | undefined;
  for (const entry of logEntries<CallDoneLine>(output, '"call done"')) {
    if (entry.service !== 'image-svc' || entry.method === undefined || entry.ms === undefined) continue;
    const name = entry.method === 'ImageStatus' && previous === 'PullImage' ? 'ImageStatus, first after PullImage' : entry.method;
    previous = entry.method;
    let list = byCall.get(name);
    if (list === undefined) byCall.set(name, (list = []));
    list.push(entry.ms);
  }
  return [...byCall].map(([name, list]) => [name, String(list.length), list.length === 0 ? '-' : percentile(list, 50).toFixed(3)]);
}

// ---------------------------------------------------------------- main

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      samples: { type: 'string', default: '100' },
      'image-samples': { type: 'string', default: '50' },
      pulls: { type: 'string', default: '3' },
      'images-only': { type: 'boolean', default: false },
      'runtime-only': { type: 'boolean', default: false },
      steps: { type: 'boolean', default: false },
      'pod-pid': { type: 'string', default: 'POD' },
      'pause-every-pod': { type: 'boolean', default: false },
    },
  });
  if (values['pod-pid'] !== 'POD' && values['pod-pid'] !== 'CONTAINER') throw new Error(`--pod-pid is POD or CONTAINER, not ${values['pod-pid']}`);
  podPid = values['pod-pid'];
  const runs = Number(values.samples);
  const imageRuns = Number(values['image-samples']);
  const pulls = Number(values.pulls);
  const runtimeOnly = values['runtime-only'] === true;
  // At info level, as a node runs it: debug would add a log line per call to every figure.
  const h = await startRuntimeHarness({
    images: ['busybox'],
    skiff: { logLevel: values.steps ? 'debug' : 'info' },
    ...(values['pause-every-pod'] ? { config: 'pause_every_pod = true' } : {}),
  });
  const work = await makeTempDir('skiff-bench-calls');
  const samples = new Samples();
  const bare = new BareHttp2Client(h.skiff.runtimeSocket);
  try {
    if (values['images-only']) {
      const firstImageLine = h.skiff.output().length;
      await imageCalls(h, samples, work, imageRuns, pulls);
      printImageRows(samples, imageRuns, pulls);
      if (values.steps) printColumns('Where the time went: image-svc\'s own time per call (its "call done" log), median ms', ['call', 'n', 'p50'], imageCallMedians(h.skiff.output().slice(firstImageLine)));
      return;
    }
    const { info } = await callUnary(h.images, 'ImageStatus', { image: { image: h.imageRef('busybox') }, verbose: true });
    const parsed = JSON.parse(info['info'] ?? '{}') as { snapshots: string[]; layers?: string[] };
    const snapshot = parsed.snapshots[0]!;

    // Warm-up: the first calls pay for connections, lazy loads and JIT.
    await podCalls(h, new Samples(), 3, bare);
    const footprint = runtimeOnly ? undefined : await idleFootprint(h);
    await floorSteps(h, samples, work, snapshot, [snapshot], runs);
    const firstMeasured = h.skiff.output().length;
    await podCalls(h, samples, runs, bare);
    const steps = stepMedians(h.skiff.output().slice(firstMeasured), fmt);
    await podLives(h, samples, runs);
    if (!runtimeOnly) await imageCalls(h, samples, work, imageRuns, pulls);

    const s = (name: string): number[] => samples.get(name);
    const sum = (...names: string[]): number => names.reduce((t, n) => t + percentile(s(n), 50), 0);
    const clientFloor = `${p50(s('Version'))} (Version)`;
    const rows: [string, number[], string, string][] = [
      ['RunPodSandbox', s('RunPodSandbox'), clientFloor, `CNI ADD ${p50(s('CNI ADD'))} + runc create ${p50(s('runc create'))} + start ${p50(s('runc start'))}`],
      ['PodSandboxStatus', s('PodSandboxStatus'), `${p50(s('PodSandboxStatus undecoded'))} (undecoded)`, ''],
      ['StopPodSandbox', s('StopPodSandbox'), clientFloor, `runc kill ${p50(s('runc kill'))} + CNI DEL ${p50(s('CNI DEL'))}`],
      ['RemovePodSandbox', s('RemovePodSandbox'), clientFloor, `runc delete ${p50(s('runc delete'))} + rm ${p50(s("rm of a container's directories"))}`],
      ['CreateContainer', s('CreateContainer'), clientFloor, `overlay mount ${p50(s('overlay mount'))} + record write ${p50(s('record write'))}`],
      ['StartContainer', s('StartContainer'), clientFloor, `runc create ${p50(s('runc create'))} + start ${p50(s('runc start'))} + record write ${p50(s('record write'))}`],
      ['ContainerStatus', s('ContainerStatus'), `${p50(s('ContainerStatus undecoded'))} (undecoded)`, ''],
      ['PodSandboxStatus, bare HTTP/2 client', s('PodSandboxStatus, bare HTTP/2 client'), `${p50(s('Version, bare HTTP/2 client'))} (Version)`, ''],
      ['ContainerStatus, bare HTTP/2 client', s('ContainerStatus, bare HTTP/2 client'), `${p50(s('Version, bare HTTP/2 client'))} (Version)`, ''],
      ['ExecSync', s('ExecSync'), clientFloor, `runc exec ${p50(s('runc exec'))}`],
      ['StopContainer', s('StopContainer'), clientFloor, `runc kill ${p50(s('runc kill'))}`],
      ['RemoveContainer', s('RemoveContainer'), clientFloor, `runc delete ${p50(s('runc delete'))} + umount ${p50(s('overlay umount'))} + rm ${p50(s("rm of a container's directories"))}`],
      ["one pod's life", s("one pod's life"), '', `sum of the steps' floors ${fmt(sum('CNI ADD', 'runc create', 'runc start', 'runc kill', 'CNI DEL', 'runc delete', 'overlay mount', 'overlay umount', "rm of a container's directories"))}`],
    ];
    printColumns(
      `Pod and container calls one at a time (${runs} samples per call), ms`,
      ['call', 'n', 'p50', 'p90', 'p99', 'client floor p50', 'target p50', 'floor of the steps by hand, p50'],
      rows.map(([name, list, client, floor]) => [name, String(list.length), ...pcts(list), client, TARGETS[name.split(',')[0]!] ?? '', floor]),
    );
    const floorNames = ['runc create', 'runc start', 'runc kill', 'runc delete', 'CNI ADD', 'CNI DEL', 'overlay mount', 'overlay umount', 'record write', "rm of a container's directories", 'Version', 'Version undecoded', 'Version, bare HTTP/2 client'];
    printColumns('Floors, same run, ms', ['step', 'n', 'p50', 'p90', 'p99'], floorNames.map((name) => [name, String(s(name).length), ...pcts(s(name))]));
    if (values.steps) printColumns('Where the time went: the step log of the calls above, median ms', ['operation / step', 'n', 'p50'], steps);
    if (footprint === undefined) return;
    printImageRows(samples, imageRuns, pulls);
    printColumns(
      `Idle footprint, no pods (target <= 200 MiB RSS, <= 90 MiB PSS in all)`,
      ['process', 'RSS', 'PSS'],
      [...footprint.rows, ['total', mib(footprint.rss), mib(footprint.pss)], [`floor: ${footprint.rows.length} idle node`, mib(footprint.floorRss), mib(footprint.floorPss)]],
    );
  } finally {
    const cleanup = Date.now();
    bare.close();
    await h.stop();
    process.stdout.write(`\n(cleanup: ${Math.round((Date.now() - cleanup) / 1000)} s)\n`);
    await rm(work, { recursive: true, force: true });
  }
}

main().catch((err: unknown) => {
  process.stderr.write(`${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
  process.exit(1);
});
