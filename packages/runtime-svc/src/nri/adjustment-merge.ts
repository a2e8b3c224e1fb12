import type { nri } from '@skiff/proto';

/** Two plugins adjusted the same thing of one container; named both, as the operator must choose. */
export class NriConflictError extends Error {}

/** A plugin asked for something Skiff does not apply; refused rather than silently dropped. */
export class NriUnsupportedError extends Error {}

export type Owned<T> = Map<string, T | null>;

/** Every plugin's adjustment of one container, merged in plugin index order; null marks a removal. */
export interface MergedAdjustment {
  annotations: Owned<string>;
  env: Owned<string>;
  mounts: Owned<nri.Mount__Output>;
  devices: Owned<nri.LinuxDevice__Output>;
  namespaces: Owned<string>;
  sysctl: Owned<string>;
  rlimits: Map<string, { hard: number; soft: number }>;
  hooks: Required<Record<HookKind, nri.Hook__Output[]>>;
  args?: string[];
  oomScoreAdj?: number;
  cgroupsPath?: string;
  seccomp?: nri.LinuxSeccomp__Output;
  memory: { limit?: number; reservation?: number; swap?: number; swappiness?: number; disableOomKiller?: boolean };
  cpu: { shares?: number; quota?: number; period?: number; realtimeRuntime?: number; realtimePeriod?: number; cpus?: string; mems?: string };
  pidsLimit?: number;
  hugepages: Map<string, number>;
  unified: Owned<string>;
  /** Which plugin set or removed each adjusted thing ("annotation foo", "memory limit", ...). */
  owners: Map<string, string>;
  /** The plugins that added OCI hooks (hooks add up; they never conflict). */
  hookOwners: string[];
}

export const HOOK_KINDS = ['prestart', 'create_runtime', 'create_container', 'start_container', 'poststart', 'poststop'] as const;
export type HookKind = (typeof HOOK_KINDS)[number];

export function emptyAdjustment(): MergedAdjustment {
  return {
    annotations: new Map(),
    env: new Map(),
    mounts: new Map(),
    devices: new Map(),
    namespaces: new Map(),
    sysctl: new Map(),
    rlimits: new Map(),
    hooks: { prestart: [], create_runtime: [], create_container: [], start_container: [], poststart: [], poststop: [] },
    memory: {},
    cpu: {},
    hugepages: new Map(),
    unified: new Map(),
    owners: new Map(),
    hookOwners: [],
  };
}

/** True when no plugin adjusted anything. */
export function isEmptyAdjustment(merged: MergedAdjustment): boolean {
  return merged.owners.size === 0 && HOOK_KINDS.every((k) => merged.hooks[k].length === 0);
}

function claim(merged: MergedAdjustment, what: string, plugin: string, container: string): void {
  const owner = merged.owners.get(what);
  if (owner !== undefined && owner !== plugin) {
    throw new NriConflictError(`NRI plugins "${owner}" and "${plugin}" both adjust the ${what} of container ${container}; remove or reconfigure one of them`);
  }
  merged.owners.set(what, plugin);
}

/** A key of a keyed list: "-key" removes it. */
function keyed<T>(merged: MergedAdjustment, map: Owned<T>, label: string, key: string, value: T, plugin: string, container: string): void {
  const removal = key.startsWith('-');
  const name = removal ? key.slice(1) : key;
  if (!name) return;
  claim(merged, `${label} ${name}`, plugin, container);
  map.set(name, removal ? null : value);
}

function optional(value: { value: string | number | boolean } | null | undefined): number | undefined {
  return value ? Number(value.value) : undefined;
}

function setSimple<K extends string, V>(merged: MergedAdjustment, target: Partial<Record<K, V>>, key: K, label: string, value: V | undefined, plugin: string, container: string): void {
  if (value === undefined) return;
  claim(merged, label, plugin, container);
  target[key] = value;
}

function unsupported(plugin: string, container: string, what: string): never {
  throw new NriUnsupportedError(`NRI plugin "${plugin}" adjusts the ${what} of container ${container}, which Skiff does not support`);
}

/** Adds one plugin's adjustment to what the plugins before it (by index) asked for. */
export function mergeAdjustment(merged: MergedAdjustment, plugin: string, container: string, adjust: nri.ContainerAdjustment__Output): void {
  for (const [key, value] of Object.entries(adjust.annotations)) keyed(merged, merged.annotations, 'annotation', key, value, plugin, container);
  for (const kv of adjust.env) keyed(merged, merged.env, 'environment variable', kv.key, kv.value, plugin, container);
  for (const mount of adjust.mounts) keyed(merged, merged.mounts, 'mount at', mount.destination, mount, plugin, container);
  for (const rlimit of adjust.rlimits) {
    claim(merged, `rlimit ${rlimit.type}`, plugin, container);
    merged.rlimits.set(rlimit.type, { hard: Number(rlimit.hard), soft: Number(rlimit.soft) });
  }
  if (adjust.hooks && HOOK_KINDS.some((kind) => adjust.hooks![kind].length > 0)) {
    for (const kind of HOOK_KINDS) merged.hooks[kind].push(...adjust.hooks[kind]);
    if (!merged.hookOwners.includes(plugin)) merged.hookOwners.push(plugin);
  }
  if (adjust.args.length > 0) {
    claim(merged, 'arguments', plugin, container);
    merged.args = adjust.args;
  }
  if (adjust.CDI_devices.length > 0) unsupported(plugin, container, 'CDI devices');
  const linux = adjust.linux;
  if (!linux) return;
  for (const device of linux.devices) keyed(merged, merged.devices, 'device', device.path, device, plugin, container);
  for (const ns of linux.namespaces) keyed(merged, merged.namespaces, 'namespace', ns.type, ns.path, plugin, container);
  for (const [key, value] of Object.entries(linux.sysctl)) keyed(merged, merged.sysctl, 'sysctl', key, value, plugin, container);
  if (linux.cgroups_path) setSimple(merged, merged as { cgroupsPath?: string }, 'cgroupsPath', 'cgroups path', linux.cgroups_path, plugin, container);
  setSimple(merged, merged as { oomScoreAdj?: number }, 'oomScoreAdj', 'OOM score adjustment', optional(linux.oom_score_adj), plugin, container);
  if (linux.seccomp_policy) setSimple(merged, merged as { seccomp?: nri.LinuxSeccomp__Output }, 'seccomp', 'seccomp policy', linux.seccomp_policy, plugin, container);
  if (linux.io_priority) unsupported(plugin, container, 'I/O priority');
  if (Object.keys(linux.net_devices).length > 0) unsupported(plugin, container, 'network devices');
  if (linux.scheduler) unsupported(plugin, container, 'scheduling attributes');
  if (linux.rdt) unsupported(plugin, container, 'RDT settings');
  if (linux.memory_policy) unsupported(plugin, container, 'memory policy');
  const resources = linux.resources;
  if (!resources) return;
  const memory = resources.memory;
  if (memory) {
    setSimple(merged, merged.memory, 'limit', 'memory limit', optional(memory.limit), plugin, container);
    setSimple(merged, merged.memory, 'reservation', 'memory reservation', optional(memory.reservation), plugin, container);
    setSimple(merged, merged.memory, 'swap', 'memory+swap limit', optional(memory.swap), plugin, container);
    setSimple(merged, merged.memory, 'swappiness', 'memory swappiness', optional(memory.swappiness), plugin, container);
    setSimple(merged, merged.memory, 'disableOomKiller', 'OOM killer setting', memory.disable_oom_killer ? memory.disable_oom_killer.value : undefined, plugin, container);
    if (memory.kernel || memory.kernel_tcp || memory.use_hierarchy) unsupported(plugin, container, 'kernel memory limits');
  }
  const cpu = resources.cpu;
  if (cpu) {
    setSimple(merged, merged.cpu, 'shares', 'CPU shares', optional(cpu.shares), plugin, container);
    setSimple(merged, merged.cpu, 'quota', 'CPU quota', optional(cpu.quota), plugin, container);
    setSimple(merged, merged.cpu, 'period', 'CPU period', optional(cpu.period), plugin, container);
    setSimple(merged, merged.cpu, 'realtimeRuntime', 'CPU realtime runtime', optional(cpu.realtime_runtime), plugin, container);
    setSimple(merged, merged.cpu, 'realtimePeriod', 'CPU realtime period', optional(cpu.realtime_period), plugin, container);
    setSimple(merged, merged.cpu, 'cpus', 'cpuset CPUs', cpu.cpus || undefined, plugin, container);
    setSimple(merged, merged.cpu, 'mems', 'cpuset memory nodes', cpu.mems || undefined, plugin, container);
  }
  if (resources.pids) setSimple(merged, merged as { pidsLimit?: number }, 'pidsLimit', 'pids limit', Number(resources.pids.limit), plugin, container);
  for (const limit of resources.hugepage_limits) {
    claim(merged, `hugepage limit ${limit.page_size}`, plugin, container);
    merged.hugepages.set(limit.page_size, Number(limit.limit));
  }
  for (const [key, value] of Object.entries(resources.unified)) keyed(merged, merged.unified, 'unified cgroup setting', key, value, plugin, container);
  if (resources.blockio_class) unsupported(plugin, container, 'block I/O class');
  if (resources.rdt_class) unsupported(plugin, container, 'RDT class');
  if (resources.devices.length > 0) unsupported(plugin, container, 'device cgroup rules');
}
