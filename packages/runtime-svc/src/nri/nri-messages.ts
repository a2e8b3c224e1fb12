import type { nri } from '@skiff/proto';
import type { LinuxResources, Spec } from '../oci/runtime-spec.js';
import type { ContainerRecord, SandboxRecord } from '../state/records.js';
import { HOOK_KINDS, type MergedAdjustment } from './adjustment-merge.js';

/** What NRI tells plugins of a pod. */
export function nriPod(pod: SandboxRecord): nri.PodSandbox {
  return {
    id: pod.id,
    name: pod.metadata.name,
    uid: pod.metadata.uid,
    namespace: pod.metadata.namespace,
    labels: pod.labels,
    annotations: pod.annotations,
    runtime_handler: pod.runtimeHandler,
    linux: { cgroup_parent: pod.cgroupParent, cgroups_path: pod.cgroupsPath },
    pid: pod.pid ?? 0,
    ips: pod.ips.map((ip) => ip.ip),
  };
}

const STATES: Record<ContainerRecord['phase'], nri.ContainerState> = {
  created: 'CONTAINER_CREATED',
  running: 'CONTAINER_RUNNING',
  exited: 'CONTAINER_STOPPED',
} as Record<ContainerRecord['phase'], nri.ContainerState>;

function nanos(value: string | undefined): string {
  return value ?? '0';
}

/** What NRI tells plugins of a container; with its spec (at creation) the process, mounts and Linux settings too. */
export function nriContainer(rec: ContainerRecord, spec?: Spec): nri.Container {
  const container: nri.Container = {
    id: rec.id,
    pod_sandbox_id: rec.sandboxId,
    name: rec.metadata.name,
    state: STATES[rec.phase] ?? 'CONTAINER_UNKNOWN',
    labels: rec.labels,
    annotations: rec.annotations,
    pid: rec.pid ?? 0,
    created_at: nanos(rec.createdAt),
    started_at: nanos(rec.startedAt),
    finished_at: nanos(rec.finishedAt),
    exit_code: rec.exitCode ?? 0,
    status_reason: rec.reason ?? '',
    status_message: rec.message ?? '',
    user: { uid: rec.user.uid, gid: rec.user.gid, additional_gids: rec.user.supplementalGroups },
    image: { name: rec.image.display, digest: rec.image.ref.includes('@') ? rec.image.ref.slice(rec.image.ref.indexOf('@') + 1) : '', config_digest: rec.image.id },
  };
  if (!spec) return container;
  const hooks = spec.hooks ?? {};
  const hook = (h: { path: string; args?: string[]; env?: string[]; timeout?: number }): nri.Hook => ({ path: h.path, args: h.args ?? [], env: h.env ?? [], ...(h.timeout !== undefined ? { timeout: { value: h.timeout } } : {}) });
  return {
    ...container,
    annotations: spec.annotations ?? rec.annotations,
    args: spec.process.args,
    env: spec.process.env,
    mounts: spec.mounts.map((m) => ({ destination: m.destination, type: m.type ?? '', source: m.source ?? '', options: m.options ?? [] })),
    hooks: {
      prestart: (hooks.prestart ?? []).map(hook),
      create_runtime: (hooks.createRuntime ?? []).map(hook),
      create_container: (hooks.createContainer ?? []).map(hook),
      start_container: (hooks.startContainer ?? []).map(hook),
      poststart: (hooks.poststart ?? []).map(hook),
      poststop: (hooks.poststop ?? []).map(hook),
    },
    rlimits: (spec.process.rlimits ?? []).map((r) => ({ type: r.type, hard: r.hard, soft: r.soft })),
    linux: {
      namespaces: spec.linux.namespaces.map((ns) => ({ type: ns.type, path: ns.path ?? '' })),
      devices: (spec.linux.devices ?? []).map((d) => ({
        path: d.path,
        type: d.type,
        major: d.major ?? 0,
        minor: d.minor ?? 0,
        ...(d.fileMode !== undefined ? { file_mode: { value: d.fileMode } } : {}),
        ...(d.uid !== undefined ? { uid: { value: d.uid } } : {}),
        ...(d.gid !== undefined ? { gid: { value: d.gid } } : {}),
      })),
      resources: nriLinuxResources(spec.linux.resources ?? {}),
      ...(spec.process.oomScoreAdj !== undefined ? { oom_score_adj: { value: spec.process.oomScoreAdj } } : {}),
      cgroups_path: spec.linux.cgroupsPath ?? '',
      sysctl: spec.linux.sysctl ?? {},
    },
  };
}

/** OCI resources as NRI's LinuxResources. */
export function nriLinuxResources(r: LinuxResources): nri.LinuxResources {
  const opt = (v: number | undefined): { value: number } | undefined => (v === undefined ? undefined : { value: v });
  return {
    memory: r.memory ? { limit: opt(r.memory.limit), reservation: opt(r.memory.reservation), swap: opt(r.memory.swap), swappiness: opt(r.memory.swappiness) } : null,
    cpu: r.cpu
      ? { shares: opt(r.cpu.shares), quota: opt(r.cpu.quota), period: opt(r.cpu.period), realtime_runtime: opt(r.cpu.realtimeRuntime), realtime_period: opt(r.cpu.realtimePeriod), cpus: r.cpu.cpus ?? '', mems: r.cpu.mems ?? '' }
      : null,
    hugepage_limits: (r.hugepageLimits ?? []).map((l) => ({ page_size: l.pageSize, limit: l.limit })),
    unified: r.unified ?? {},
    ...(r.pids ? { pids: { limit: r.pids.limit } } : {}),
  };
}

/** NRI's Field numbers for the owner labels of MergedAdjustment: [field, compound]. */
const FIELDS: [prefix: string, field: number, compound: boolean][] = [
  ['annotation ', 1, true],
  ['mount at ', 2, true],
  ['device ', 4, true],
  ['environment variable ', 6, true],
  ['arguments', 7, false],
  ['memory limit', 8, false],
  ['memory reservation', 9, false],
  ['memory+swap limit', 10, false],
  ['memory swappiness', 13, false],
  ['OOM killer setting', 14, false],
  ['CPU shares', 16, false],
  ['CPU quota', 17, false],
  ['CPU period', 18, false],
  ['CPU realtime runtime', 19, false],
  ['CPU realtime period', 20, false],
  ['cpuset CPUs', 21, false],
  ['cpuset memory nodes', 22, false],
  ['pids limit', 23, false],
  ['hugepage limit ', 24, true],
  ['unified cgroup setting ', 27, true],
  ['cgroups path', 28, false],
  ['OOM score adjustment', 29, false],
  ['rlimit ', 30, true],
  ['seccomp policy', 32, false],
  ['namespace ', 33, true],
  ['sysctl ', 34, true],
];
const OCI_HOOKS_FIELD = 3;

/** Who adjusted what of one container, as ValidateContainerAdjustment carries it. */
export function nriOwners(containerId: string, merged: MergedAdjustment): nri.OwningPlugins {
  const simple: Record<number, string> = {};
  const compound: Record<number, { owners: Record<string, string> }> = {};
  for (const [label, plugin] of merged.owners) {
    const entry = FIELDS.find(([prefix]) => label.startsWith(prefix));
    if (!entry) continue;
    const [prefix, field, isCompound] = entry;
    if (isCompound) (compound[field] ??= { owners: {} }).owners[label.slice(prefix.length)] = plugin;
    else simple[field] = plugin;
  }
  if (merged.hookOwners.length > 0) simple[OCI_HOOKS_FIELD] = merged.hookOwners.join(',');
  return { owners: { [containerId]: { simple, compound } } };
}

/** The merged adjustment as one ContainerAdjustment (removals as "-key"), for validating plugins. */
export function nriAdjustment(merged: MergedAdjustment): nri.ContainerAdjustment {
  const key = (name: string, value: unknown): string => (value === null ? `-${name}` : name);
  return {
    annotations: Object.fromEntries([...merged.annotations].map(([k, v]) => [key(k, v), v ?? ''])),
    env: [...merged.env].map(([k, v]) => ({ key: key(k, v), value: v ?? '' })),
    mounts: [...merged.mounts].map(([dest, m]) => m ?? { destination: `-${dest}` }),
    hooks: HOOK_KINDS.some((k) => merged.hooks[k].length > 0) ? merged.hooks : null,
    rlimits: [...merged.rlimits].map(([type, l]) => ({ type, hard: l.hard, soft: l.soft })),
    args: merged.args ?? [],
    linux: {
      devices: [...merged.devices].map(([path, d]) => d ?? { path: `-${path}` }),
      namespaces: [...merged.namespaces].map(([type, path]) => (path === null ? { type: `-${type}` } : { type, path })),
      sysctl: Object.fromEntries([...merged.sysctl].map(([k, v]) => [key(k, v), v ?? ''])),
      cgroups_path: merged.cgroupsPath ?? '',
      ...(merged.oomScoreAdj !== undefined ? { oom_score_adj: { value: merged.oomScoreAdj } } : {}),
      ...(merged.seccomp ? { seccomp_policy: merged.seccomp } : {}),
      resources: adjustedResources(merged),
    },
  };
}

function adjustedResources(merged: MergedAdjustment): nri.LinuxResources {
  const opt = <T>(v: T | undefined): { value: T } | undefined => (v === undefined ? undefined : { value: v });
  const { memory, cpu } = merged;
  return {
    memory: { limit: opt(memory.limit), reservation: opt(memory.reservation), swap: opt(memory.swap), swappiness: opt(memory.swappiness), disable_oom_killer: opt(memory.disableOomKiller) },
    cpu: { shares: opt(cpu.shares), quota: opt(cpu.quota), period: opt(cpu.period), realtime_runtime: opt(cpu.realtimeRuntime), realtime_period: opt(cpu.realtimePeriod), cpus: cpu.cpus ?? '', mems: cpu.mems ?? '' },
    hugepage_limits: [...merged.hugepages].map(([page_size, limit]) => ({ page_size, limit })),
    unified: Object.fromEntries([...merged.unified].map(([k, v]) => [v === null ? `-${k}` : k, v ?? ''])),
    ...(merged.pidsLimit !== undefined ? { pids: { limit: merged.pidsLimit } } : {}),
  };
}
