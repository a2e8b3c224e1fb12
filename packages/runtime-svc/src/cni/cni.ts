import { constants, promises as fs } from 'node:fs';
import { join } from 'node:path';
import { atomicWriteJson, readJsonIfExists, runCommand } from '@skiff/common';
import type { CniNetworkConfig, CniPluginConfig } from './config.js';
import { parseCniResult, type CniResult } from './result.js';

export const DEFAULT_CNI_BIN_DIRS: readonly string[] = ['/opt/cni/bin', '/usr/lib/cni'];
export const DEFAULT_CNI_CACHE_DIR = '/var/lib/skiff/cni/results';

/** The portMappings capability argument (CNI conventions), filled from CRI PortMapping. */
export interface PortMapping {
  hostPort: number;
  containerPort: number;
  protocol: 'tcp' | 'udp' | 'sctp';
  hostIP?: string;
}

/** The per-attachment parameters: who is attached, where, and with what extras. */
export interface Attachment {
  containerId: string;
  /** Path of the network namespace (CNI_NETNS). */
  netns: string;
  ifName?: string;
  /** CNI_ARGS, e.g. K8S_POD_NAMESPACE / K8S_POD_NAME / K8S_POD_INFRA_CONTAINER_ID. */
  args?: Record<string, string>;
  /** Capability arguments; each goes only to plugins whose config declares the capability. */
  capabilityArgs?: { portMappings?: PortMapping[]; [capability: string]: unknown };
}

export class CniError extends Error {
  constructor(
    readonly plugin: string,
    readonly command: string,
    /** The CNI error code (spec section "Error"), or undefined when the plugin printed none. */
    readonly code: number | undefined,
    readonly details: string,
  ) {
    super(`CNI plugin ${plugin} ${command} failed${code !== undefined ? ` (code ${code})` : ''}: ${details}`);
    this.name = 'CniError';
  }
}

/** What we keep per attachment: the result DEL and CHECK need, and the config ADD used. */
interface CachedAttachment {
  network: CniNetworkConfig;
  attachment: Attachment;
  result: CniResult;
}

export interface CniRunnerOptions {
  binDirs?: readonly string[];
  /** Where ADD results are kept (persistently: DEL after a daemon restart needs them). */
  cacheDir?: string;
  /** Limit for one plugin invocation. */
  timeoutMs?: number;
}

type Command = 'ADD' | 'DEL' | 'CHECK';

/**
 * Plugins whose only work is what one capability argument asks for: given none, their ADD passes
 * the previous result on unchanged and their DEL finds nothing of theirs to remove (portmap
 * without portMappings makes no rules). They are not run then: one process fewer, in sequence
 * with the others, on every pod's start and stop.
 */
const CAPABILITY_ONLY_PLUGINS: Readonly<Record<string, string>> = { portmap: 'portMappings' };

/** Whether running `plugin` for `a` would change nothing (see CAPABILITY_ONLY_PLUGINS). */
export function pluginIsIdle(plugin: CniPluginConfig, a: Attachment): boolean {
  const capability = CAPABILITY_ONLY_PLUGINS[plugin.type];
  if (capability === undefined) return false;
  const value = plugin.capabilities?.[capability] ? a.capabilityArgs?.[capability] : undefined;
  return !(Array.isArray(value) && value.length > 0);
}

/** Runs CNI network configurations against network namespaces, as the CNI spec's section 3 describes. */
export class CniRunner {
  readonly binDirs: readonly string[];
  readonly cacheDir: string;
  private readonly timeoutMs: number;

  constructor(options: CniRunnerOptions = {}) {
    this.binDirs = options.binDirs ?? DEFAULT_CNI_BIN_DIRS;
    this.cacheDir = options.cacheDir ?? DEFAULT_CNI_CACHE_DIR;
    this.timeoutMs = options.timeoutMs ?? 60_000;
  }

  /** Finds a plugin's executable in the first bin dir that has it. */
  async findPlugin(type: string): Promise<string> {
    for (const dir of this.binDirs) {
      const path = join(dir, type);
      try {
        await fs.access(path, constants.X_OK);
        return path;
      } catch {
        // try the next directory
      }
    }
    throw new CniError(type, 'lookup', undefined, `no executable "${type}" in ${this.binDirs.join(', ')}`);
  }

  private cacheFile(network: string, a: Attachment): string {
    return join(this.cacheDir, `${network}-${a.containerId}-${a.ifName ?? 'eth0'}.json`);
  }

  async cachedResult(network: string, a: Attachment): Promise<CniResult | undefined> {
    return (await readJsonIfExists<CachedAttachment>(this.cacheFile(network, a)))?.result;
  }

  /** ADD: runs the plugins in order, each given the previous one's result. Caches the final result. */
  async add(network: CniNetworkConfig, a: Attachment): Promise<CniResult> {
    let prev: CniResult | undefined;
    for (const plugin of network.plugins) {
      if (prev && pluginIsIdle(plugin, a)) continue;
      prev = await this.invoke('ADD', network, plugin, a, prev);
    }
    if (!prev) throw new CniError(network.name, 'ADD', undefined, 'the network has no plugins');
    await fs.mkdir(this.cacheDir, { recursive: true, mode: 0o700 });
    await atomicWriteJson(this.cacheFile(network.name, a), { network, attachment: a, result: prev } satisfies CachedAttachment);
    return prev;
  }

  /**
   * DEL: runs the plugins in reverse order, each given the cached ADD result. The configuration
   * ADD used is preferred over `network` (the spec wants the same one), and DEL of an attachment
   * that was never added, or already deleted, succeeds.
   */
  async del(network: CniNetworkConfig, a: Attachment): Promise<void> {
    const file = this.cacheFile(network.name, a);
    const cached = await readJsonIfExists<CachedAttachment>(file);
    const net = cached?.network ?? network;
    const attachment: Attachment = { ...(cached?.attachment ?? {}), ...a };
    for (const plugin of [...net.plugins].reverse()) {
      if (!pluginIsIdle(plugin, attachment)) await this.invoke('DEL', net, plugin, attachment, cached?.result);
    }
    await fs.rm(file, { force: true });
  }

  /** Drops the cached ADD result without running the plugins (nothing outside the namespace to undo). */
  async forget(network: CniNetworkConfig, a: Attachment): Promise<void> {
    await fs.rm(this.cacheFile(network.name, a), { force: true });
  }

  /** Every cached attachment: what DEL would need for attachments whose owner is gone. */
  async cachedAttachments(): Promise<{ network: CniNetworkConfig; attachment: Attachment }[]> {
    let names: string[];
    try {
      names = await fs.readdir(this.cacheDir);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return [];
      throw err;
    }
    const out: { network: CniNetworkConfig; attachment: Attachment }[] = [];
    for (const name of names.filter((n) => n.endsWith('.json')).sort()) {
      const cached = await readJsonIfExists<CachedAttachment>(join(this.cacheDir, name)).catch(() => undefined);
      if (cached?.network && cached.attachment) out.push({ network: cached.network, attachment: cached.attachment });
    }
    return out;
  }

  /** CHECK: asks every plugin whether the attachment is still as ADD left it. */
  async check(network: CniNetworkConfig, a: Attachment): Promise<void> {
    if (network.disableCheck) return;
    const cached = await readJsonIfExists<CachedAttachment>(this.cacheFile(network.name, a));
    if (!cached) throw new CniError(network.name, 'CHECK', undefined, `no cached ADD result for ${a.containerId}; it was never added`);
    for (const plugin of cached.network.plugins) await this.invoke('CHECK', cached.network, plugin, { ...cached.attachment, ...a }, cached.result);
  }

  /** The request configuration of CNI spec section 3: plugin config + name, version, runtimeConfig, prevResult. */
  static requestConfig(network: CniNetworkConfig, plugin: CniPluginConfig, a: Attachment, prev: CniResult | undefined): Record<string, unknown> {
    const { capabilities, ...rest } = plugin;
    const request: Record<string, unknown> = { ...rest, cniVersion: network.cniVersion, name: network.name };
    const runtimeConfig: Record<string, unknown> = {};
    for (const [capability, enabled] of Object.entries(capabilities ?? {})) {
      const value = a.capabilityArgs?.[capability];
      if (enabled && value !== undefined) runtimeConfig[capability] = value;
    }
    if (Object.keys(runtimeConfig).length > 0) request['runtimeConfig'] = runtimeConfig;
    if (prev) request['prevResult'] = prev;
    return request;
  }

  private async invoke(command: Command, network: CniNetworkConfig, plugin: CniPluginConfig, a: Attachment, prev: CniResult | undefined): Promise<CniResult | undefined> {
    const binary = await this.findPlugin(plugin.type);
    const env: NodeJS.ProcessEnv = {
      ...process.env,
      CNI_COMMAND: command,
      CNI_CONTAINERID: a.containerId,
      CNI_NETNS: a.netns,
      CNI_IFNAME: a.ifName ?? 'eth0',
      CNI_PATH: this.binDirs.join(':'),
      CNI_ARGS: Object.entries(a.args ?? {})
        .map(([k, v]) => `${k}=${v}`)
        .join(';'),
    };
    const input = JSON.stringify(CniRunner.requestConfig(network, plugin, a, prev));
    const result = await runCommand(binary, [], { input, env, timeoutMs: this.timeoutMs });
    if (result.code !== 0) {
      let code: number | undefined;
      let details = result.stderr.trim() || `exit ${result.code}`;
      try {
        const err = JSON.parse(result.stdout) as { code?: number; msg?: string; details?: string };
        code = err.code;
        details = [err.msg, err.details].filter(Boolean).join(': ') || details;
      } catch {
        // no JSON error on stdout
      }
      throw new CniError(plugin.type, command, code, details);
    }
    if (command !== 'ADD') return prev;
    if (!result.stdout.trim()) throw new CniError(plugin.type, command, undefined, 'plugin printed no result');
    try {
      return parseCniResult(result.stdout);
    } catch {
      throw new CniError(plugin.type, command, undefined, `unreadable result: ${result.stdout.slice(0, 300)}`);
    }
  }
}
