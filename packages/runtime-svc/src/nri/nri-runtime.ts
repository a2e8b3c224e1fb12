import { createServer, type Server, type Socket } from 'node:net';
import { promises as fs } from 'node:fs';
import { status } from '@grpc/grpc-js';
import { StatusError, bindPrivateSocket, errorMessage, type Logger } from '@skiff/common';
import { NRI_VERSION, NriConnection, TtrpcCallError, TtrpcCode, type nri } from '@skiff/proto';
import type { ContainerRecord, SandboxRecord } from '../state/records.js';
import { emptyAdjustment, mergeAdjustment, NriConflictError, NriUnsupportedError, type MergedAdjustment } from './adjustment-merge.js';
import { nriAdjustment, nriContainer, nriOwners, nriPod } from './nri-messages.js';
import { NriEvent, NriPlugin, NriPluginFailure, VALID_EVENT_MASK } from './nri-plugin.js';
import { launchPreinstalledPlugins, type LaunchedPlugin } from './plugin-launcher.js';
import { NriSyncTooLargeError } from './sync-messages.js';

export interface NriRuntimeOptions {
  socket: string;
  pluginDir: string;
  pluginConfigDir: string;
  registrationTimeoutMs: number;
  requestTimeoutMs: number;
  runtimeVersion: string;
  log: Logger;
  /** The pods and containers there are now, for Synchronize. */
  snapshot: () => { pods: SandboxRecord[]; containers: ContainerRecord[] };
  /** Carries out the updates and evictions plugins ask for; without it every one fails. */
  containers?: NriContainerControl;
}

/** What a plugin may do to containers other than the one an event is about. */
export interface NriContainerControl {
  /** The resources the update sets over the container's own, through UpdateContainerResources' path; the events skip `plugin`. */
  update(containerId: string, resources: nri.LinuxResources__Output, plugin: string): Promise<void>;
  /** Stops the container, as StopContainer does. */
  evict(containerId: string, reason: string, plugin: string): Promise<void>;
}

/** Updates plus evictions one request or answer may ask for; more is refused whole. */
export const MAX_CONTAINER_CHANGES = 64;
/** Changes asked for in answers and not yet done, of all plugins; beyond it, answers' changes are dropped. */
const MAX_PENDING_CHANGES = 256;

/** Connections still registering, configuring or synchronizing beyond this are closed at once. */
const MAX_UNREGISTERED_CONNECTIONS = 32;
const PLUGIN_INDEX = /^[0-9]{2}$/;
const PLUGIN_NAME = /^[A-Za-z0-9][A-Za-z0-9._-]{0,62}$/;

type PodEvent = 'RunPodSandbox' | 'StopPodSandbox' | 'RemovePodSandbox' | 'UpdatePodSandbox' | 'PostUpdatePodSandbox';
type ContainerUpdate = nri.ContainerUpdate__Output;
type ContainerEviction = nri.ContainerEviction__Output;
type ContainerEvent = 'PostCreateContainer' | 'StartContainer' | 'PostStartContainer' | 'UpdateContainer' | 'PostUpdateContainer' | 'StopContainer' | 'RemoveContainer';

/**
 * NRI in runtime-svc: the plugin socket, registration, Configure and Synchronize, and the
 * lifecycle events relayed to the plugins subscribed to them, in index order. `active` is false
 * while no plugin is registered: the calls then skip NRI without awaiting anything.
 */
export class NriRuntime {
  private plugins: NriPlugin[] = [];
  private server: Server | undefined;
  private unregistered = 0;
  private launched: LaunchedPlugin[] = [];
  /** Every open connection, registered or not: closing the runtime closes them all. */
  private readonly connections = new Set<NriConnection>();
  /** Synchronizations in progress: events wait for them, so a plugin misses nothing after its snapshot. */
  private readonly synchronizing = new Set<Promise<void>>();
  /** Each container's last event still being relayed: its next one waits for it, so they arrive in order. */
  private readonly containerEvents = new Map<string, Promise<void>>();
  /**
   * The plugins each container's CRI call is waiting for an answer from (the call holds the
   * container's lock): that plugin's own request to change the container cannot wait for the lock.
   */
  private readonly awaitedBy = new Map<string, NriPlugin[]>();
  private pendingChanges = 0;

  constructor(private readonly o: NriRuntimeOptions) {}

  get active(): boolean {
    return this.plugins.length > 0 || this.synchronizing.size > 0;
  }

  private async synchronized(): Promise<void> {
    if (this.synchronizing.size > 0) await Promise.allSettled([...this.synchronizing]);
  }

  /** The registered plugins' names, in the order they are called. */
  pluginNames(): string[] {
    return this.plugins.map((p) => p.name);
  }

  async listen(): Promise<void> {
    const server = createServer((socket) => this.accept(socket));
    server.maxConnections = 256;
    await bindPrivateSocket(this.o.socket, (path) => new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(path, () => {
        server.off('error', reject);
        resolve();
      });
    }));
    this.server = server;
    this.o.log.info({ socket: this.o.socket }, 'NRI plugin socket ready');
  }

  /** Starts the pre-installed plugins; each registers over its own connected socket. */
  async launchPreinstalled(): Promise<void> {
    this.launched = await launchPreinstalledPlugins(this.o.pluginDir, this.o.pluginConfigDir, this.o.log);
    for (const plugin of this.launched) this.accept(plugin.socket, plugin.config);
  }

  async close(): Promise<void> {
    for (const connection of this.connections) connection.close();
    this.plugins = [];
    // Launched plugins are ours: they go with the daemon, and the next one starts them again.
    for (const { child } of this.launched) if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
    this.launched = [];
    const server = this.server;
    this.server = undefined;
    if (server) await new Promise<void>((resolve) => server.close(() => resolve()));
    await fs.rm(this.o.socket, { force: true });
  }

  private accept(socket: Socket, config = ''): void {
    if (this.unregistered >= MAX_UNREGISTERED_CONNECTIONS) {
      socket.destroy();
      return;
    }
    this.unregistered += 1;
    let pending = true;
    const settle = (): void => {
      if (pending) this.unregistered -= 1;
      pending = false;
    };
    const connection = new NriConnection(socket, 'runtime');
    this.connections.add(connection);
    const timer = setTimeout(() => connection.close(new Error(`no registration within ${this.o.registrationTimeoutMs} ms`)), this.o.registrationTimeoutMs);
    let plugin: NriPlugin | undefined;
    connection.onClose((reason) => {
      this.connections.delete(connection);
      clearTimeout(timer);
      settle();
      if (plugin) this.plugins = this.plugins.filter((p) => p !== plugin);
      this.o.log.info({ plugin: plugin?.name, reason: reason?.message }, 'NRI connection closed');
    });
    connection.serveRuntime('RegisterPlugin', async (request) => {
      if (plugin) throw new TtrpcCallError(TtrpcCode.InvalidArgument, `plugin ${plugin.name} is registered already`);
      if (!PLUGIN_INDEX.test(request.plugin_idx)) throw new TtrpcCallError(TtrpcCode.InvalidArgument, `plugin index must be two digits, got ${JSON.stringify(request.plugin_idx)}`);
      if (!PLUGIN_NAME.test(request.plugin_name)) throw new TtrpcCallError(TtrpcCode.InvalidArgument, `plugin name must be letters, digits, ".", "_" or "-", got ${JSON.stringify(request.plugin_name)}`);
      const name = `${request.plugin_idx}-${request.plugin_name}`;
      if (this.plugins.some((p) => p.name === name)) throw new TtrpcCallError(TtrpcCode.InvalidArgument, `a plugin ${name} is registered already`);
      plugin = new NriPlugin(connection, request.plugin_idx, request.plugin_name, this.o.requestTimeoutMs, this.o.log);
      // Registered: Configure and each Synchronize request are bounded by the request timeout from
      // here, as a large node's Synchronize in several requests may take longer than registering.
      clearTimeout(timer);
      const registered = plugin;
      // Configure follows the answer to RegisterPlugin: the plugin waits for it after registering.
      setImmediate(() => {
        this.admit(registered, config)
          .catch((err: unknown) => registered.close(`set-up failed: ${errorMessage(err)}`))
          .finally(settle);
      });
      return {};
    });
    connection.serveRuntime('UpdateContainers', async (request) => {
      if (!plugin || !this.plugins.includes(plugin)) throw new TtrpcCallError(TtrpcCode.FailedPrecondition, 'a plugin may update containers only once it is registered and synchronized');
      const asked = request.update.length + request.evict.length;
      if (asked > MAX_CONTAINER_CHANGES) {
        throw new TtrpcCallError(TtrpcCode.InvalidArgument, `at most ${MAX_CONTAINER_CHANGES} container updates and evictions per request, got ${asked}`);
      }
      return { failed: await this.carryOut(plugin, 'UpdateContainers', request.update, request.evict) };
    });
  }

  /** Configure, then Synchronize; only then does the plugin get events. */
  private async admit(plugin: NriPlugin, config: string): Promise<void> {
    const configured = await plugin.call('Configure', {
      config,
      runtime_name: 'skiff',
      runtime_version: this.o.runtimeVersion,
      registration_timeout: this.o.registrationTimeoutMs,
      request_timeout: this.o.requestTimeoutMs,
      NRI_version: NRI_VERSION,
    });
    if (!configured || plugin.isClosed) return;
    if ((configured.events & ~VALID_EVENT_MASK) !== 0) throw new Error(`it subscribed to unknown events (mask 0x${configured.events.toString(16)})`);
    plugin.events = configured.events === 0 ? VALID_EVENT_MASK : configured.events;
    plugin.failRequest = configured.failure_policy?.fail_request ?? false;
    plugin.keepConnected = configured.failure_policy?.keep_connected ?? false;
    // Events from the snapshot on wait until the plugin is in the list: it misses none.
    const { pods, containers } = this.o.snapshot();
    const synchronizing = (async () => {
      let updates;
      try {
        updates = await plugin.synchronize(pods.map(nriPod), containers.map((c) => nriContainer(c)));
      } catch (err) {
        if (err instanceof NriSyncTooLargeError) this.o.log.error({ plugin: plugin.name, err: err.message }, 'NRI plugin cannot be synchronized: shrink the labels and annotations of that pod or container, or remove it');
        throw err;
      }
      if (!updates || plugin.isClosed) return;
      this.carryOutLater(plugin, 'Synchronize', updates, []);
      this.plugins = [...this.plugins, plugin].sort((a, b) => (a.index === b.index ? a.base.localeCompare(b.base) : a.index.localeCompare(b.index)));
      this.o.log.info({ plugin: plugin.name, events: plugin.events, plugins: this.pluginNames() }, 'NRI plugin registered');
    })();
    this.synchronizing.add(synchronizing);
    try {
      await synchronizing;
    } finally {
      this.synchronizing.delete(synchronizing);
    }
  }

  private subscribers(event: number): NriPlugin[] {
    return this.plugins.filter((p) => p.subscribed(event) && !p.isClosed);
  }

  /**
   * Each update and eviction in turn; what fails is logged and, unless the update says to ignore
   * its failure, returned. An eviction that fails comes back as an update of that container.
   */
  private async carryOut(plugin: NriPlugin, asked: string, updates: ContainerUpdate[], evictions: ContainerEviction[]): Promise<ContainerUpdate[]> {
    const failed: ContainerUpdate[] = [];
    const attempt = async (change: 'update' | 'evict', containerId: string, work: (control: NriContainerControl) => Promise<void>): Promise<boolean> => {
      try {
        const control = this.o.containers;
        if (!control) throw new Error('this runtime carries out no container changes');
        const waiting = this.awaitedBy.get(containerId);
        if (waiting?.includes(plugin)) throw new Error(`container ${containerId} waits for this plugin's answer to an event; ask in the answer instead`);
        await work(control);
        return true;
      } catch (err) {
        this.o.log.warn({ plugin: plugin.name, asked, container: containerId, change, err: errorMessage(err) }, 'NRI plugin asked for a container change that failed');
        return false;
      }
    };
    for (const update of updates) {
      const resources = update.linux?.resources;
      if (!resources) continue;
      const done = await attempt('update', update.container_id, (control) => control.update(update.container_id, resources, plugin.name));
      if (!done && !update.ignore_failure) failed.push(update);
    }
    for (const eviction of evictions) {
      const done = await attempt('evict', eviction.container_id, (control) => control.evict(eviction.container_id, eviction.reason, plugin.name));
      if (!done) failed.push({ container_id: eviction.container_id, linux: null, ignore_failure: false });
    }
    return failed;
  }

  /**
   * Changes asked for in an answer: the call that asked may hold the lock of a container they are
   * about, so they are carried out once it lets go, in the background, failures logged.
   */
  private carryOutLater(plugin: NriPlugin, asked: string, updates: ContainerUpdate[], evictions: ContainerEviction[]): void {
    const count = updates.length + evictions.length;
    if (count === 0) return;
    if (count > MAX_CONTAINER_CHANGES || this.pendingChanges + count > MAX_PENDING_CHANGES) {
      this.o.log.warn({ plugin: plugin.name, asked, updates: updates.length, evictions: evictions.length, pending: this.pendingChanges }, `NRI plugin asked for too many container changes (at most ${MAX_CONTAINER_CHANGES} per answer, ${MAX_PENDING_CHANGES} pending); none is carried out`);
      return;
    }
    this.pendingChanges += count;
    setImmediate(() => {
      this.carryOut(plugin, asked, updates, evictions).finally(() => {
        this.pendingChanges -= count;
      });
    });
  }

  /** `call`, with the container recorded meanwhile as waiting for the plugin. */
  private async awaiting<T>(containerId: string | undefined, plugin: NriPlugin, call: () => Promise<T>): Promise<T> {
    if (!containerId) return call();
    this.awaitedBy.set(containerId, [...(this.awaitedBy.get(containerId) ?? []), plugin]);
    try {
      return await call();
    } finally {
      const left = [...(this.awaitedBy.get(containerId) ?? [])];
      left.splice(left.indexOf(plugin), 1);
      if (left.length > 0) this.awaitedBy.set(containerId, left);
      else this.awaitedBy.delete(containerId);
    }
  }

  /** A plugin's own error answer: logged for notifications; it fails the request where its policy says so. */
  private async notify(
    event: PodEvent | ContainerEvent,
    request: { pod: nri.PodSandbox; container?: nri.Container; linux_resources?: nri.LinuxResources; overhead_linux_resources?: nri.LinuxResources },
    options: { except?: string | undefined; refusable?: boolean } = {},
  ): Promise<void> {
    const { except, refusable } = options;
    await this.synchronized();
    for (const plugin of this.subscribers(NriEvent[event])) {
      if (plugin.name === except) continue;
      try {
        const reply = await this.awaiting(request.container?.id, plugin, () => plugin.call(event, request));
        if (reply && 'update' in reply) this.carryOutLater(plugin, event, reply.update, 'evict' in reply ? reply.evict : []);
      } catch (err) {
        if (err instanceof NriPluginFailure) throw new StatusError(status.UNAVAILABLE, err.message);
        if (refusable) throw new StatusError(status.FAILED_PRECONDITION, `NRI plugin "${plugin.name}" refused ${event} of pod ${request.pod.namespace ?? ''}/${request.pod.name ?? ''}: ${errorMessage(err)}`);
        this.o.log.warn({ plugin: plugin.name, event, err: errorMessage(err) }, 'NRI plugin answered an event with an error');
      }
    }
  }

  /**
   * RunPodSandbox, before the pod is ready (listed, or given containers): a plugin's error answer
   * fails it with FailedPrecondition naming the plugin, as a failed hook fails the pod upstream.
   */
  runPodSandbox(pod: SandboxRecord): Promise<void> {
    return this.notify('RunPodSandbox', { pod: nriPod(pod) }, { refusable: true });
  }

  /** `resources` (and `overhead`) for UpdatePodSandbox. */
  notifyPod(event: PodEvent, pod: SandboxRecord, resources?: { resources: nri.LinuxResources; overhead: nri.LinuxResources }): Promise<void> {
    return this.notify(event, { pod: nriPod(pod), ...(resources ? { linux_resources: resources.resources, overhead_linux_resources: resources.overhead } : {}) });
  }

  /**
   * `resources` for UpdateContainer: the new ones. `except` names the plugin not told (the one that
   * asked for the update). A container's events are relayed in the order they are given, each after
   * the one before has been (a stop recorded by a refresh outside the container's lock is heard
   * before the RemoveContainer that follows it).
   */
  notifyContainer(event: ContainerEvent, pod: SandboxRecord, container: ContainerRecord, resources?: nri.LinuxResources, except?: string): Promise<void> {
    const request = { pod: nriPod(pod), container: nriContainer(container), ...(resources ? { linux_resources: resources } : {}) };
    const before = this.containerEvents.get(container.id) ?? Promise.resolve();
    const relayed = before.then(() => this.notify(event, request, { except }));
    const settled = relayed.catch(() => undefined);
    this.containerEvents.set(container.id, settled);
    void settled.then(() => {
      if (this.containerEvents.get(container.id) === settled) this.containerEvents.delete(container.id);
    });
    return relayed;
  }

  /**
   * CreateContainer: every subscribed plugin's adjustment merged in index order, then validated by
   * the validating plugins. A conflict, something Skiff does not apply, a plugin's error answer or
   * a validator's refusal fails the creation with FailedPrecondition naming the plugin(s).
   */
  async adjustContainer(pod: SandboxRecord, container: nri.Container): Promise<MergedAdjustment> {
    await this.synchronized();
    const podMessage = nriPod(pod);
    const merged = emptyAdjustment();
    const consulted: nri.PluginInstance[] = [];
    const what = `container ${container.name ?? ''} (${container.id ?? ''})`;
    for (const plugin of this.subscribers(NriEvent.CreateContainer)) {
      let reply;
      try {
        reply = await plugin.call('CreateContainer', { pod: podMessage, container });
      } catch (err) {
        throw new StatusError(err instanceof NriPluginFailure ? status.UNAVAILABLE : status.FAILED_PRECONDITION, err instanceof NriPluginFailure ? err.message : `NRI plugin "${plugin.name}" failed to create ${what}: ${errorMessage(err)}`);
      }
      if (!reply) continue;
      consulted.push({ name: plugin.base, index: plugin.index });
      this.carryOutLater(plugin, 'CreateContainer', reply.update, reply.evict);
      if (!reply.adjust) continue;
      try {
        mergeAdjustment(merged, plugin.name, container.id ?? '', reply.adjust);
      } catch (err) {
        if (err instanceof NriConflictError || err instanceof NriUnsupportedError) throw new StatusError(status.FAILED_PRECONDITION, err.message);
        throw err;
      }
    }
    const validators = this.subscribers(NriEvent.ValidateContainerAdjustment);
    if (validators.length === 0) return merged;
    const request = { pod: podMessage, container, adjust: nriAdjustment(merged), update: [], owners: nriOwners(container.id ?? '', merged), plugins: consulted };
    for (const validator of validators) {
      let verdict;
      try {
        verdict = await validator.call('ValidateContainerAdjustment', request);
      } catch (err) {
        throw new StatusError(err instanceof NriPluginFailure ? status.UNAVAILABLE : status.FAILED_PRECONDITION, `NRI validator "${validator.name}" failed on ${what}: ${errorMessage(err)}`);
      }
      if (verdict?.reject) throw new StatusError(status.FAILED_PRECONDITION, `NRI validator "${validator.name}" refused ${what}: ${verdict.reason || 'no reason given'}`);
    }
    return merged;
  }
}
