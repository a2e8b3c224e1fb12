/**
 * The floors the benchmarks measure Skiff against, done by hand on the same machine in the same run:
 * runc on a bundle of the busybox rootfs, the CNI plugins invoked as the runtime invokes them, network
 * namespaces, and idle node processes for memory.
 */
import { execFile, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { readFile, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { createImageClient, type ImageServiceClient } from '@skiff/proto';
import { rssBytes } from './stats.js';

const run = promisify(execFile);
export const CNI_BIN_DIRS = ['/opt/cni/bin', '/usr/lib/cni'];

export async function pssBytes(pid: number): Promise<number> {
  const text = await readFile(`/proc/${pid}/smaps_rollup`, 'utf8');
  const kb = /^Pss:\s+(\d+) kB$/m.exec(text)?.[1];
  return kb === undefined ? 0 : Number(kb) * 1024;
}

/** What no daemon can go below: an idle node process of the same binary, measured beside the daemons. */
export interface NodeFloor {
  rss: number;
  pss: number;
}

export const IDLE_NODE_SCRIPT = 'setInterval(() => {}, 1e9)';

export async function idleNodeFloor(): Promise<NodeFloor> {
  const child = spawn(process.execPath, ['-e', IDLE_NODE_SCRIPT], { stdio: 'ignore' });
  try {
    // Start-up is over well within this; its RSS is flat afterwards.
    await new Promise((r) => setTimeout(r, 1500));
    return { rss: await rssBytes(child.pid!), pss: await pssBytes(child.pid!) };
  } finally {
    child.kill('SIGKILL');
  }
}

// ---------------------------------------------------------------- the floor: runc and CNI by hand

/** A bundle with a copy of the image's rootfs (read-only), `sleep 3600`, cgroups under `cgroupParent`. */
export async function makeBundle(dir: string, snapshot: string): Promise<string> {
  const bundle = join(dir, 'bundle');
  await run('mkdir', ['-p', bundle]);
  await run('cp', ['-a', snapshot, join(bundle, 'rootfs')]);
  await run('runc', ['spec', '--bundle', bundle]);
  return bundle;
}

/** Points the bundle's spec at `sleep 3600` on the read-only rootfs, in cgroup `cgroupParent/id`. */
export async function writeSleepSpec(bundle: string, id: string, cgroupParent: string): Promise<void> {
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
}

/** `runc run -d` or `runc create`: the container keeps runc's stdio, so it must not be a pipe we wait on. */
export function runcDetached(runcRoot: string, verb: 'run' | 'create', bundle: string, id: string): Promise<void> {
  const args = verb === 'run' ? ['run', '-d', '--bundle', bundle, id] : ['create', '--bundle', bundle, id];
  return runc(runcRoot, args, 'ignore');
}

/** Any runc command under `runcRoot`, waiting for its exit. */
export function runc(runcRoot: string, args: string[], stdio: 'ignore' | 'pipe' = 'pipe'): Promise<void> {
  return new Promise<void>((resolve, reject) => {
    const child = spawn('runc', ['--root', runcRoot, ...args], { stdio });
    child.once('error', reject);
    child.once('exit', (code) => (code === 0 ? resolve() : reject(new Error(`runc ${args.join(' ')} exited with ${code}`))));
  });
}

export async function runcRunDetached(runcRoot: string, bundle: string, id: string, cgroupParent: string): Promise<void> {
  await writeSleepSpec(bundle, id, cgroupParent);
  await runcDetached(runcRoot, 'run', bundle, id);
}

export interface CniPlugin {
  type: string;
  capabilities?: Record<string, boolean>;
  [key: string]: unknown;
}

export interface Conflist {
  cniVersion: string;
  name: string;
  plugins: CniPlugin[];
}

export async function cniInvoke(command: 'ADD' | 'DEL', net: Conflist, plugin: CniPlugin, id: string, netns: string, ifName: string, prev: unknown): Promise<unknown> {
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
    // 'close', not 'exit': under load the process can be reaped before its stdout has been read.
    child.once('close', (code) => (code === 0 ? resolve(out) : reject(new Error(`${plugin.type} ${command} exited with ${code}: ${out}`))));
    child.stdin.end(input);
  });
  return command === 'ADD' ? JSON.parse(stdout) : prev;
}

/** The loopback attachment and the pod network's plugin chain, as the runtime runs them. */
export async function cniAdd(net: Conflist, id: string, netns: string): Promise<unknown> {
  await cniInvoke('ADD', { cniVersion: net.cniVersion, name: 'bench-loopback', plugins: [] }, { type: 'loopback' }, id, netns, 'lo', undefined);
  let prev: unknown;
  for (const plugin of net.plugins) prev = await cniInvoke('ADD', net, plugin, id, netns, 'eth0', prev);
  return prev;
}

export async function cniDel(net: Conflist, id: string, netns: string, result: unknown): Promise<void> {
  for (const plugin of [...net.plugins].reverse()) await cniInvoke('DEL', net, plugin, id, netns, 'eth0', result);
}

/** A network namespace bound to `path` (an empty file), as the runtime makes one. */
export async function createNetns(path: string): Promise<void> {
  await writeFile(path, '');
  await run('unshare', [`--net=${path}`, 'true']);
}

export async function removeNetns(path: string): Promise<void> {
  await run('umount', [path]);
  await rm(path, { force: true });
}


// ---------------------------------------------------------------- a whole pod by hand

/**
 * A pod's start done by hand, step for step as the runtime does it for a one-container pod: the CNI
 * ADD (beside `runc run -d` of the pause, for a pod that has one), then `runc run -d` of each
 * container in turn. The kubelet's default pod (a PID namespace per container) has no pause. The
 * network namespace is made by prepareHandPod, before any clock starts.
 */
export interface HandPod {
  netns: string;
  cniId: string;
  /** The pause's bundle, for a pod that has one. */
  pause: string | undefined;
  containers: string[];
  /** runc ids of what was started, for removeHandPod. */
  started: string[];
  cniResult?: unknown;
}

export async function prepareHandPod(netns: string, bundles: { pause?: string; containers: string[] }): Promise<HandPod> {
  await createNetns(netns);
  return { netns, cniId: randomBytes(32).toString('hex'), pause: bundles.pause, containers: bundles.containers, started: [] };
}

export async function startHandPod(pod: HandPod, net: Conflist, runcRoot: string, cgroupParent: string): Promise<void> {
  const runOne = async (bundle: string): Promise<void> => {
    const id = `bench-hand-${randomBytes(6).toString('hex')}`;
    pod.started.push(id);
    await runcRunDetached(runcRoot, bundle, id, cgroupParent);
  };
  const network = cniAdd(net, pod.cniId, pod.netns).then((result) => (pod.cniResult = result));
  await Promise.all([network, pod.pause === undefined ? undefined : runOne(pod.pause)]);
  for (const bundle of pod.containers) await runOne(bundle);
}

export async function removeHandPod(pod: HandPod, net: Conflist, runcRoot: string): Promise<void> {
  for (const id of pod.started.splice(0)) await runc(runcRoot, ['delete', '--force', id]).catch(() => undefined);
  await cniDel(net, pod.cniId, pod.netns, pod.cniResult).catch(() => undefined);
  await removeNetns(pod.netns);
}

export interface GrpcFloorServer {
  pid: number;
  /** A client of it; it connects at its first call. */
  client: ImageServiceClient;
  stop(): void;
}

/**
 * The grpc-js floor server (grpc-floor-server.ts) in a process of its own: it answers ImageStatus
 * and ListImages with `responses`, every other call with an empty message, and does nothing else.
 */
export async function startGrpcFloorServer(socket: string, responses: { status: unknown; list: unknown } = { status: {}, list: {} }): Promise<GrpcFloorServer> {
  const child = spawn(process.execPath, [fileURLToPath(new URL('./grpc-floor-server.js', import.meta.url)), socket], { stdio: ['pipe', 'pipe', 'inherit'] });
  child.stdin.end(JSON.stringify(responses));
  await new Promise<void>((resolve, reject) => {
    child.once('exit', (code) => reject(new Error(`grpc-floor-server exited with ${code}`)));
    child.stdout.once('data', () => resolve());
  });
  const client = createImageClient(socket);
  return {
    pid: child.pid!,
    client,
    stop: () => {
      client.close();
      child.kill('SIGKILL');
    },
  };
}
