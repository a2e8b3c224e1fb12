/**
 * Skiff as the kubelet meets it, for the runtime tests and benchmarks: `skiff up` (image-svc and
 * runtime-svc) with the default pod network it installs, test images pushed to a real registry and
 * pulled through PullImage, and a CRI runtime client.
 *
 *   startRuntimeHarness({ images?, config?, registriesConf? }): Promise<RuntimeHarness>
 *       images: test images to push and pull (default ['busybox']); config: extra [runtime] keys;
 *       registriesConf: registries.conf for Skiff, given the harness's registry's host
 *   waitUntilRuntimeServiceAnswers(socket, timeoutMs?): Promise<void>   Version answers
 *   connectRuntime(socket): RuntimeServiceClient    a channel of its own that reconnects quickly
 *   class RuntimeHarness {
 *     skiff, registry, runtime, images, cgroupParent, logDir, network, location
 *     imageRef(name): string                     the pulled reference of a test image
 *     podConfig(overrides?): cri.PodSandboxConfig   unique metadata, a log directory
 *     runPod(overrides?, runtimeHandler?): Promise<Pod>   under RUNTIME_HANDLER unless one is given
 *     containerConfig(name, overrides?): cri.ContainerConfig     busybox, `sleep 3600`
 *     createContainer(pod, name, overrides?) / runContainer(...): Promise<string>
 *     containerStatus(id, verbose?), waitForExit(id, timeoutMs?), exec(id, cmd, timeoutSeconds?)
 *     podStatus(id), podIp(pod)
 *     memoryBoundCgroupParent(name, bytes): Promise<string>   a pod cgroup parent with a memory limit
 *     inventory(): Promise<RuntimeInventory>      relative to the start (see runtime-inventory.ts)
 *     settledInventory(): Promise<RuntimeInventory>   the same once nothing of this instance's (mounts,
 *                                                 namespaces, runc, monitors, cgroups, directories)
 *                                                 belongs to an id the runtime no longer lists
 *                                                 (removals answer before their cleanup ends), or after 30 s
 *     restartSkiff(): Promise<void>               `skiff up` stopped and started on the same state
 *     stop(): Promise<void>                       removes every pod, then anything the runtime left
 *   }
 *
 *   RUNTIME_HANDLER, UNDER_GVISOR          SKIFF_E2E_RUNTIME_HANDLER ("" for runc), and whether it is runsc
 *   gvisorCannot(reason): { skip? }         test options: skipped under gVisor, naming the reason
 *
 * The cgroup parent is the configured one (Status tells). The default bridge (skiff0) and
 * host-local's directory are removed at the end when the harness made them and nothing else uses
 * them; empty cgroups are removed too.
 */
import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdir, readdir, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { removeCgroupEverywhere } from '@skiff/test-support';
import { callUnary, createRuntimeClient, type cri, type ImageServiceClient, type RuntimeServiceClient } from '@skiff/proto';
import { pushTestImage, type TestImageName } from './image-catalogue.js';
import { startRegistry, type Registry } from './registry.js';
import {
  inventoryIds,
  listConmonProcesses,
  mountsUnder,
  readPodNetwork,
  subtractBaseline,
  takeInventory,
  type PodNetwork,
  type RuntimeInventory,
  type RuntimeLocation,
} from './runtime-inventory.js';
import { startSkiff, type SkiffInstance, type SkiffOptions } from './skiff-instance.js';

const CGROUP_ROOT = '/sys/fs/cgroup';
const run = promisify(execFile);

export interface RuntimeHarnessOptions {
  images?: readonly TestImageName[];
  /** Extra keys of the [runtime] table. */
  config?: string;
  /** Further keys of the other tables, as startSkiff takes them. */
  skiff?: Pick<SkiffOptions, 'imageConfig' | 'streamConfig' | 'logsConfig' | 'nriConfig' | 'logLevel'>;
  /** registries.conf, e.g. the harness's registry as the mirror of another. */
  registriesConf?: (registryHost: string) => string;
}

export interface Pod {
  id: string;
  config: cri.PodSandboxConfig;
}

/** A client on a channel of its own (no shared subchannel) that retries a restarted daemon within 100-500 ms. */
export function connectRuntime(socket: string): RuntimeServiceClient {
  return createRuntimeClient(socket, {
    'grpc.use_local_subchannel_pool': 1,
    'grpc.initial_reconnect_backoff_ms': 100,
    'grpc.min_reconnect_backoff_ms': 100,
    'grpc.max_reconnect_backoff_ms': 500,
  });
}

export async function waitUntilRuntimeServiceAnswers(socket: string, timeoutMs = 30_000): Promise<void> {
  const client = connectRuntime(socket);
  const deadline = Date.now() + timeoutMs;
  try {
    for (;;) {
      try {
        await callUnary(client, 'Version', {}, { timeoutMs: 1000 });
        return;
      } catch (err) {
        if (Date.now() > deadline) throw new Error(`runtime-svc did not answer within ${timeoutMs} ms: ${(err as Error).message}`);
        await new Promise((r) => setTimeout(r, 100));
      }
    }
  } finally {
    client.close();
  }
}

let podCounter = 0;

/** The handler pods run under unless a test names one: SKIFF_E2E_RUNTIME_HANDLER, runc's ("") when unset. */
export const RUNTIME_HANDLER = process.env['SKIFF_E2E_RUNTIME_HANDLER'] ?? '';
/** The runtime tests run under gVisor (`scripts/test.sh`'s second pass). */
export const UNDER_GVISOR = RUNTIME_HANDLER === 'runsc';

/**
 * Options of a test that gVisor cannot pass, for a limit of runtime-svc's README table ("What
 * gVisor cannot honour"): skipped under gVisor with `gVisor: <reason>`, run as it is under runc.
 * Only where nothing meaningful can be asserted under gVisor instead.
 */
export function gvisorCannot(reason: string): { skip?: string } {
  return UNDER_GVISOR ? { skip: `gVisor: ${reason}` } : {};
}

export class RuntimeHarness {
  runtime: RuntimeServiceClient;
  images: ImageServiceClient;
  readonly logDir: string;
  readonly location: RuntimeLocation;
  private readonly refs = new Map<TestImageName, string>();
  private baseline!: RuntimeInventory;

  private constructor(
    public skiff: SkiffInstance,
    readonly registry: Registry,
    readonly cgroupParent: string,
    readonly network: PodNetwork,
    private readonly bridgeExisted: boolean,
    private readonly ipamDirExisted: boolean,
  ) {
    this.runtime = connectRuntime(skiff.runtimeSocket);
    this.images = skiff.imageClient();
    this.logDir = join(skiff.dir, 'logs');
    this.location = { dir: skiff.dir, root: skiff.root, runDir: skiff.runDir, cgroupParent, network };
  }

  static async start(options: RuntimeHarnessOptions = {}): Promise<RuntimeHarness> {
    const registry = await startRegistry();
    let skiff: SkiffInstance | undefined;
    try {
      skiff = await startSkiff({
        ...options.skiff,
        ...(options.config === undefined ? {} : { config: options.config }),
        ...(options.registriesConf === undefined ? {} : { registriesConf: options.registriesConf(registry.host) }),
      });
      await waitUntilRuntimeServiceAnswers(skiff.runtimeSocket);
      const cgroupParent = await configuredCgroupParent(skiff.runtimeSocket);
      const network = await readPodNetwork(join(skiff.dir, 'cni'));
      const harness = new RuntimeHarness(skiff, registry, cgroupParent, network, existsSync(`/sys/class/net/${network.bridge}`), existsSync(network.ipamDir));
      harness.baseline = await takeInventory(harness.location);
      for (const name of options.images ?? ['busybox']) {
        const pushed = await pushTestImage(registry, name);
        await callUnary(harness.images, 'PullImage', { image: { image: pushed.reference } }, { timeoutMs: 120_000 });
        harness.refs.set(name, pushed.reference);
      }
      return harness;
    } catch (err) {
      await skiff?.stop();
      await registry.stop();
      throw err;
    }
  }

  imageRef(name: TestImageName): string {
    const ref = this.refs.get(name);
    if (ref === undefined) throw new Error(`image ${name} was not pulled by this harness`);
    return ref;
  }

  podConfig(overrides: Partial<cri.PodSandboxConfig> = {}): cri.PodSandboxConfig {
    podCounter++;
    const name = `pod-${process.pid}-${podCounter}`;
    return {
      metadata: { name, namespace: 'skiff-e2e', uid: `uid-${process.pid}-${podCounter}-${Date.now()}`, attempt: 0 },
      hostname: name,
      log_directory: join(this.logDir, name),
      labels: { suite: 'runtime-e2e' },
      ...overrides,
    };
  }

  /**
   * A cgroup below the configured parent whose memory is limited to `bytes`, as the kubelet's pod
   * cgroups are: a pod with it as its cgroup_parent is bounded as a whole (the only memory bound a
   * gVisor pod has). Removed with the harness.
   */
  async memoryBoundCgroupParent(name: string, bytes: number): Promise<string> {
    const parent = `${this.cgroupParent}/${name}-${process.pid}`;
    const memory = join(CGROUP_ROOT, 'memory', parent);
    await mkdir(memory, { recursive: true });
    await writeFile(join(memory, 'memory.limit_in_bytes'), String(bytes));
    return parent;
  }

  /** Pods run with the handler SKIFF_E2E_RUNTIME_HANDLER names (runc's when unset), unless one is given. */
  async runPod(overrides: Partial<cri.PodSandboxConfig> = {}, runtimeHandler = RUNTIME_HANDLER): Promise<Pod> {
    const config = this.podConfig(overrides);
    const { pod_sandbox_id } = await callUnary(this.runtime, 'RunPodSandbox', { config, runtime_handler: runtimeHandler }, { timeoutMs: 60_000 });
    return { id: pod_sandbox_id, config };
  }

  containerConfig(name: string, overrides: Partial<cri.ContainerConfig> = {}): cri.ContainerConfig {
    return {
      metadata: { name, attempt: 0 },
      image: overrides.image ?? { image: this.imageRef('busybox') },
      command: ['sleep', '3600'],
      log_path: `${name}.log`,
      ...overrides,
    };
  }

  async createContainer(pod: Pod, name: string, overrides: Partial<cri.ContainerConfig> = {}): Promise<string> {
    const request = { pod_sandbox_id: pod.id, config: this.containerConfig(name, overrides), sandbox_config: pod.config };
    return (await callUnary(this.runtime, 'CreateContainer', request, { timeoutMs: 60_000 })).container_id;
  }

  async runContainer(pod: Pod, name: string, overrides: Partial<cri.ContainerConfig> = {}): Promise<string> {
    const id = await this.createContainer(pod, name, overrides);
    await callUnary(this.runtime, 'StartContainer', { container_id: id }, { timeoutMs: 60_000 });
    return id;
  }

  async containerStatus(id: string): Promise<cri.ContainerStatus__Output> {
    const { status } = await callUnary(this.runtime, 'ContainerStatus', { container_id: id }, { timeoutMs: 10_000 });
    if (!status) throw new Error(`no status for container ${id}`);
    return status;
  }

  async waitForExit(id: string, timeoutMs = 20_000): Promise<cri.ContainerStatus__Output> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const status = await this.containerStatus(id);
      if (status.state === 'CONTAINER_EXITED') return status;
      if (Date.now() > deadline) throw new Error(`container ${id} still ${status.state} after ${timeoutMs} ms`);
      await new Promise((r) => setTimeout(r, 100));
    }
  }

  async exec(id: string, cmd: string[], timeoutSeconds = 10): Promise<{ code: number; stdout: string; stderr: string }> {
    const response = await callUnary(this.runtime, 'ExecSync', { container_id: id, cmd, timeout: timeoutSeconds }, { timeoutMs: (timeoutSeconds + 30) * 1000 });
    return { code: response.exit_code, stdout: response.stdout.toString('utf8'), stderr: response.stderr.toString('utf8') };
  }

  async podStatus(id: string): Promise<cri.PodSandboxStatus__Output> {
    const { status } = await callUnary(this.runtime, 'PodSandboxStatus', { pod_sandbox_id: id }, { timeoutMs: 10_000 });
    if (!status) throw new Error(`no status for pod ${id}`);
    return status;
  }

  async podIp(pod: Pod): Promise<string> {
    const ip = (await this.podStatus(pod.id)).network?.ip ?? '';
    if (!ip) throw new Error(`pod ${pod.id} has no IP`);
    return ip;
  }

  /** What the runtime has on the machine now, less host-local addresses and nat rules that predate the harness. */
  async inventory(): Promise<RuntimeInventory> {
    return subtractBaseline(await takeInventory(this.location), this.baseline);
  }

  /**
   * The inventory once the cleanups of answered removals are over: nothing on the machine mentions
   * an id the runtime does not list. Gives up after `timeoutMs` and returns what is there then,
   * for the caller's assertion to name.
   */
  async settledInventory(timeoutMs = 30_000): Promise<RuntimeInventory> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const inventory = await this.inventory();
      const { items } = await callUnary(this.runtime, 'ListPodSandbox', {}, { timeoutMs: 10_000 });
      const { containers } = await callUnary(this.runtime, 'ListContainers', {}, { timeoutMs: 10_000 });
      const listed = new Set([...items.map((p) => p.id), ...containers.map((c) => c.id)]);
      // Addresses and nat rules are left out: host-local's directory and the nat table are shared
      // with other instances, and a removal releases them before it answers (StopPodSandbox).
      const own = inventoryIds({ ...inventory, ipOwners: {}, natRuleOwners: [] });
      if ([...own].every((id) => listed.has(id)) || Date.now() > deadline) return inventory;
      await new Promise((r) => setTimeout(r, 20));
    }
  }

  /** SIGKILLs runtime-svc and waits until the supervisor's new one answers (its recovery done). */
  async killRuntimeService(): Promise<void> {
    const pid = await this.skiff.servicePid('runtime-svc');
    if (pid === undefined) throw new Error('runtime-svc is not running');
    process.kill(pid, 'SIGKILL');
    await this.skiff.waitForNewPid('runtime-svc', pid, 60_000);
    await waitUntilRuntimeServiceAnswers(this.skiff.runtimeSocket, 60_000);
  }

  /** Stops `skiff up` (its services end; containers keep running) and starts it again on the same state. */
  async restartSkiff(): Promise<void> {
    this.runtime.close();
    await this.skiff.stop({ keepDir: true });
    this.skiff = await startSkiff({ dir: this.skiff.dir });
    await waitUntilRuntimeServiceAnswers(this.skiff.runtimeSocket);
    this.runtime = connectRuntime(this.skiff.runtimeSocket);
    this.images = this.skiff.imageClient();
  }

  async stop(): Promise<void> {
    try {
      await this.removeEverything();
    } catch {
      // the runtime is not answering; the sweep below removes what it would have
    }
    this.runtime.close();
    await this.sweep();
    await this.skiff.stop();
    await this.registry.stop();
    await this.removeNetworkLeftovers();
  }

  private async removeEverything(): Promise<void> {
    const { items } = await callUnary(this.runtime, 'ListPodSandbox', {}, { timeoutMs: 10_000 });
    for (const pod of items) await callUnary(this.runtime, 'RemovePodSandbox', { pod_sandbox_id: pod.id }, { timeoutMs: 60_000 });
    const { containers } = await callUnary(this.runtime, 'ListContainers', {}, { timeoutMs: 10_000 });
    for (const c of containers) await callUnary(this.runtime, 'RemoveContainer', { container_id: c.id }, { timeoutMs: 60_000 });
    // The sweep below must not race the runtime's own cleanups.
    await this.settledInventory();
  }

  /** Removes by hand whatever the runtime did not: runc containers, monitors, mounts, addresses, cgroups. */
  private async sweep(): Promise<void> {
    const left = await this.inventory();
    const runcRoot = join(this.skiff.runDir, 'runc');
    for (const id of left.runc) await run('runc', ['--root', runcRoot, 'delete', '--force', id]).catch(() => undefined);
    for (const { pid } of await listConmonProcesses(this.skiff.runDir)) {
      try {
        process.kill(pid, 'SIGKILL');
      } catch {
        // already gone
      }
    }
    const mounts = (await mountsUnder(this.skiff.dir)).sort((a, b) => b.length - a.length);
    for (const mount of mounts) await run('umount', ['--lazy', mount]).catch(() => undefined);
    const ours = inventoryIds(left);
    for (const [ip, owner] of Object.entries(left.ipOwners)) if (ours.has(owner)) await rm(join(this.network.ipamDir, ip), { force: true });
    for (const id of left.cgroups) await removeCgroupTree(`${this.cgroupParent}/${id}`);
    await removeCgroupTree(this.cgroupParent);
  }

  private async removeNetworkLeftovers(): Promise<void> {
    const bridge = `/sys/class/net/${this.network.bridge}`;
    if (!this.bridgeExisted && existsSync(bridge) && (await readdir(join(bridge, 'brif')).catch(() => [])).length === 0) {
      await run('ip', ['link', 'del', this.network.bridge]).catch(() => undefined);
    }
    if (!this.ipamDirExisted) {
      const names = await readdir(this.network.ipamDir).catch(() => [] as string[]);
      if (names.every((n) => n === 'lock' || n.startsWith('last_reserved_ip'))) await rm(this.network.ipamDir, { recursive: true, force: true });
    }
  }
}

async function configuredCgroupParent(socket: string): Promise<string> {
  const client = connectRuntime(socket);
  try {
    const { info } = await callUnary(client, 'Status', { verbose: true }, { timeoutMs: 10_000 });
    return (JSON.parse(info['config'] ?? '{}') as { runtime: { cgroup_parent: string } }).runtime.cgroup_parent;
  } finally {
    client.close();
  }
}

export function startRuntimeHarness(options: RuntimeHarnessOptions = {}): Promise<RuntimeHarness> {
  return RuntimeHarness.start(options);
}

/** Removes a cgroup and the ones below it from every mounted hierarchy, as far as they are empty. */
export const removeCgroupTree = removeCgroupEverywhere;
