import type { Device, Hook, LinuxResources, NamespaceType, Seccomp, SeccompAction, SeccompArg, Spec } from '../oci/runtime-spec.js';
import { HOOK_KINDS, NriUnsupportedError, isEmptyAdjustment, type HookKind, type MergedAdjustment } from './adjustment-merge.js';

const SPEC_HOOK_NAMES: Record<HookKind, keyof NonNullable<Spec['hooks']>> = {
  prestart: 'prestart',
  create_runtime: 'createRuntime',
  create_container: 'createContainer',
  start_container: 'startContainer',
  poststart: 'poststart',
  poststop: 'poststop',
};

const NAMESPACE_TYPES: readonly NamespaceType[] = ['pid', 'network', 'mount', 'ipc', 'uts', 'user', 'cgroup'] as NamespaceType[];
const DEVICE_TYPES = ['c', 'b', 'u', 'p'] as const;

function ownerOf(merged: MergedAdjustment, prefix: string): string {
  for (const [what, plugin] of merged.owners) if (what.startsWith(prefix)) return plugin;
  return 'an NRI plugin';
}

/**
 * What a sandbox-kind handler (runsc) cannot honour: its containers run in the pod's sandbox
 * kernel, so host devices, OCI hooks, namespaces, a cgroups path and a seccomp policy of their own
 * mean nothing there. Refused, naming the plugin.
 */
function refuseForSandboxedHandler(merged: MergedAdjustment, handler: string): void {
  const refused: [boolean, string, string][] = [
    [merged.devices.size > 0, 'device', 'devices'],
    [HOOK_KINDS.some((k) => merged.hooks[k].length > 0), '', 'OCI hooks'],
    [merged.namespaces.size > 0, 'namespace', 'namespaces'],
    [merged.cgroupsPath !== undefined, 'cgroups path', 'cgroups path'],
    [merged.seccomp !== undefined, 'seccomp policy', 'seccomp policy'],
  ];
  for (const [present, prefix, what] of refused) {
    if (present) {
      const plugin = prefix ? ownerOf(merged, prefix) : 'an NRI plugin';
      throw new NriUnsupportedError(`${plugin === 'an NRI plugin' ? plugin : `NRI plugin "${plugin}"`} adjusts the ${what} of a container of handler "${handler}", which runs it in the pod's sandbox kernel where that has no effect`);
    }
  }
}

function envName(entry: string): string {
  const eq = entry.indexOf('=');
  return eq < 0 ? entry : entry.slice(0, eq);
}

function specHook(hook: { path: string; args: string[]; env: string[]; timeout: { value: string | number } | null }): Hook {
  return {
    path: hook.path,
    ...(hook.args.length > 0 ? { args: hook.args } : {}),
    ...(hook.env.length > 0 ? { env: hook.env } : {}),
    ...(hook.timeout ? { timeout: Number(hook.timeout.value) } : {}),
  };
}

function specSeccomp(policy: NonNullable<MergedAdjustment['seccomp']>): Seccomp {
  return {
    defaultAction: policy.default_action as SeccompAction,
    ...(policy.default_errno ? { defaultErrnoRet: Number(policy.default_errno.value) } : {}),
    ...(policy.architectures.length > 0 ? { architectures: policy.architectures } : {}),
    ...(policy.flags.length > 0 ? { flags: policy.flags } : {}),
    syscalls: policy.syscalls.map((s) => ({
      names: s.names,
      action: s.action as SeccompAction,
      ...(s.errno_ret ? { errnoRet: Number(s.errno_ret.value) } : {}),
      ...(s.args.length > 0
        ? { args: s.args.map((a): SeccompArg => ({ index: a.index, value: Number(a.value), valueTwo: Number(a.value_two), op: a.op as SeccompArg['op'] })) }
        : {}),
    })),
  };
}

function applyResources(spec: Spec, merged: MergedAdjustment): void {
  const resources: LinuxResources = (spec.linux.resources ??= {});
  if (Object.keys(merged.memory).length > 0) {
    const memory = (resources.memory ??= {});
    if (merged.memory.limit !== undefined) memory.limit = merged.memory.limit;
    if (merged.memory.reservation !== undefined) memory.reservation = merged.memory.reservation;
    if (merged.memory.swap !== undefined) memory.swap = merged.memory.swap;
    if (merged.memory.swappiness !== undefined) memory.swappiness = merged.memory.swappiness;
    if (merged.memory.disableOomKiller !== undefined) memory.disableOOMKiller = merged.memory.disableOomKiller;
  }
  if (Object.keys(merged.cpu).length > 0) resources.cpu = { ...resources.cpu, ...merged.cpu };
  if (merged.pidsLimit !== undefined) resources.pids = { limit: merged.pidsLimit };
  if (merged.hugepages.size > 0) {
    const limits = new Map((resources.hugepageLimits ?? []).map((l) => [l.pageSize, l.limit]));
    for (const [pageSize, limit] of merged.hugepages) limits.set(pageSize, limit);
    resources.hugepageLimits = [...limits].map(([pageSize, limit]) => ({ pageSize, limit }));
  }
  if (merged.unified.size > 0) {
    const unified = { ...resources.unified };
    for (const [key, value] of merged.unified) {
      if (value === null) delete unified[key];
      else unified[key] = value;
    }
    resources.unified = unified;
  }
}

function applyDevices(spec: Spec, merged: MergedAdjustment): void {
  const devices = new Map((spec.linux.devices ?? []).map((d) => [d.path, d]));
  const rules = (spec.linux.resources ??= {}).devices ?? [];
  for (const [path, device] of merged.devices) {
    if (device === null) {
      devices.delete(path);
      continue;
    }
    const type = device.type as Device['type'];
    if (!DEVICE_TYPES.includes(type)) throw new NriUnsupportedError(`NRI plugin "${ownerOf(merged, `device ${path}`)}" adds device ${path} of unknown type "${device.type}"`);
    devices.set(path, {
      type,
      path,
      major: Number(device.major),
      minor: Number(device.minor),
      ...(device.file_mode ? { fileMode: Number(device.file_mode.value) } : {}),
      ...(device.uid ? { uid: Number(device.uid.value) } : {}),
      ...(device.gid ? { gid: Number(device.gid.value) } : {}),
    });
    if (type === 'c' || type === 'b') rules.push({ allow: true, type, major: Number(device.major), minor: Number(device.minor), access: 'rwm' });
  }
  spec.linux.devices = [...devices.values()];
  spec.linux.resources!.devices = rules;
}

/**
 * Applies the plugins' merged adjustment to the OCI spec Skiff built. `handlerKind` "sandbox"
 * (runsc) refuses what its sandbox kernel cannot honour.
 */
export function applyAdjustment(spec: Spec, merged: MergedAdjustment, handler: { name: string; kind: 'oci' | 'sandbox' }): void {
  if (isEmptyAdjustment(merged)) return;
  if (handler.kind === 'sandbox') refuseForSandboxedHandler(merged, handler.name);
  if (merged.annotations.size > 0) {
    const annotations = { ...spec.annotations };
    for (const [key, value] of merged.annotations) {
      if (value === null) delete annotations[key];
      else annotations[key] = value;
    }
    spec.annotations = annotations;
  }
  if (merged.env.size > 0) {
    const env = spec.process.env.filter((entry) => !merged.env.has(envName(entry)));
    for (const [key, value] of merged.env) if (value !== null) env.push(`${key}=${value}`);
    spec.process.env = env;
  }
  if (merged.args) spec.process.args = merged.args;
  if (merged.mounts.size > 0) {
    const mounts = spec.mounts.filter((m) => !merged.mounts.has(m.destination));
    for (const mount of merged.mounts.values()) {
      if (mount) mounts.push({ destination: mount.destination, type: mount.type || 'bind', source: mount.source, options: mount.options });
    }
    spec.mounts = mounts;
  }
  if (merged.rlimits.size > 0) {
    const rlimits = (spec.process.rlimits ?? []).filter((r) => !merged.rlimits.has(r.type));
    for (const [type, { hard, soft }] of merged.rlimits) rlimits.push({ type, hard, soft });
    spec.process.rlimits = rlimits;
  }
  if (merged.oomScoreAdj !== undefined) spec.process.oomScoreAdj = merged.oomScoreAdj;
  for (const kind of HOOK_KINDS) {
    if (merged.hooks[kind].length === 0) continue;
    const hooks = (spec.hooks ??= {});
    const name = SPEC_HOOK_NAMES[kind];
    hooks[name] = [...(hooks[name] ?? []), ...merged.hooks[kind].map(specHook)];
  }
  if (merged.devices.size > 0) applyDevices(spec, merged);
  for (const [type, path] of merged.namespaces) {
    if (!NAMESPACE_TYPES.includes(type as NamespaceType)) throw new NriUnsupportedError(`NRI plugin "${ownerOf(merged, `namespace ${type}`)}" adjusts a namespace of unknown type "${type}"`);
    const others = spec.linux.namespaces.filter((ns) => ns.type !== type);
    spec.linux.namespaces = path === null ? others : [...others, { type: type as NamespaceType, ...(path ? { path } : {}) }];
  }
  if (merged.sysctl.size > 0) {
    const sysctl = { ...spec.linux.sysctl };
    for (const [key, value] of merged.sysctl) {
      if (value === null) delete sysctl[key];
      else sysctl[key] = value;
    }
    spec.linux.sysctl = sysctl;
  }
  if (merged.cgroupsPath !== undefined) spec.linux.cgroupsPath = merged.cgroupsPath;
  if (merged.seccomp !== undefined) spec.linux.seccomp = specSeccomp(merged.seccomp);
  applyResources(spec, merged);
}
