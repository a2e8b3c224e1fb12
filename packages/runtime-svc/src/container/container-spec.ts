import { status } from '@grpc/grpc-js';
import { StatusError } from '@skiff/common';
import type { OciImageConfig } from '@skiff/image-store';
import type { cri } from '@skiff/proto';
import type { SandboxPaths } from '../daemon/paths.js';
import type { ResolvedDevice } from '../oci/devices.js';
import type { ContainerSpecInput, NamespaceMode, NamespacesInput, ResourcesInput, SeccompInput } from '../oci/spec-builder.js';
import type { SandboxRecord } from '../state/records.js';
import { resolveCommand } from './command.js';
import { mergeEnv } from './env.js';
import { podFileMounts } from './container-mounts.js';
import type { BindMountInput } from '../oci/spec-builder.js';
import type { ResolvedUser } from './user.js';
import { apparmorFor } from './security-profiles.js';
import { rootfsProtection } from './rootfs-protection.js';
import { joinPinned, podOwnNamespaces, type PinnedNamespace } from '../sandbox/pod-namespaces.js';

/** CRI resources (int64 as decimal strings) in the spec builder's form. */
export function resourcesOf(r: cri.LinuxContainerResources__Output | null): ResourcesInput | undefined {
  if (!r) return undefined;
  const n = (v: string): number => Number(v);
  return {
    cpuShares: n(r.cpu_shares),
    cpuQuota: n(r.cpu_quota),
    cpuPeriod: n(r.cpu_period),
    cpusetCpus: r.cpuset_cpus,
    cpusetMems: r.cpuset_mems,
    memoryLimitBytes: n(r.memory_limit_in_bytes),
    memorySwapLimitBytes: n(r.memory_swap_limit_in_bytes),
    hugepageLimits: r.hugepage_limits.map((h) => ({ pageSize: h.page_size, limitBytes: n(h.limit) })),
    unified: { ...r.unified },
  };
}

/**
 * The container's namespaces: network and UTS are always the pod's (or the host's), IPC the pod's
 * unless NODE, and PID by the container's own option: POD (the pod's), CONTAINER (its own), NODE,
 * or TARGET (another container's, given by its init pid; POD in a pod without a pause, which has
 * none to share, is CONTAINER). The pod's own namespaces are joined
 * through the files that pin them (sandbox/pod-namespaces.ts), never through the pause's pid.
 */
export function containerNamespaces(sandbox: SandboxRecord, sandboxPaths: SandboxPaths, options: cri.NamespaceOption__Output | null, targetPid: number | undefined): NamespacesInput {
  const own = new Set(podOwnNamespaces(sandbox));
  const pod = (kind: PinnedNamespace): NamespaceMode => (own.has(kind) ? joinPinned(sandboxPaths, kind) : { mode: 'host' });
  const pidMode = options?.pid ?? 'POD';
  let pid: NamespaceMode;
  switch (pidMode) {
    case 'NODE':
      pid = { mode: 'host' };
      break;
    case 'CONTAINER':
      pid = { mode: 'new' };
      break;
    case 'TARGET':
      if (targetPid === undefined) throw new StatusError(status.INVALID_ARGUMENT, 'PID namespace mode TARGET needs target_id, a running container of this pod');
      pid = { mode: 'join', path: `/proc/${targetPid}/ns/pid` };
      break;
    default:
      // A pod without a pause has no PID namespace to share: POD there is a namespace of its own.
      pid = sandbox.pauseless && sandbox.namespaces.pid !== 'NODE' ? { mode: 'new' } : pod('pid');
  }
  const ipcHost = (options?.ipc ?? sandbox.namespaces.ipc) === 'NODE';
  return {
    user: sandbox.userns ? { mode: 'join', path: sandboxPaths.userns } : { mode: 'host' },
    network: sandbox.namespaces.network === 'NODE' ? { mode: 'host' } : { mode: 'join', path: sandbox.netnsPath ?? '' },
    uts: pod('uts'),
    ipc: ipcHost ? { mode: 'host' } : pod('ipc'),
    pid,
  };
}

export interface ContainerSpecParts {
  id: string;
  config: cri.ContainerConfig__Output;
  image: OciImageConfig;
  sandbox: SandboxRecord;
  sandboxPaths: SandboxPaths;
  rootfs: string;
  user: ResolvedUser;
  mounts: BindMountInput[];
  devices: ResolvedDevice[];
  hostDevices: ResolvedDevice[];
  seccomp: SeccompInput;
  cgroupsPath: string;
  targetPid: number | undefined;
}

/** The spec builder's input for a container, from its CRI config, its image and its sandbox. */
export function containerSpecInput(p: ContainerSpecParts): ContainerSpecInput {
  const { config, image, sandbox } = p;
  const linux = config.linux;
  const security = linux?.security_context ?? null;
  const imageConfig = image.config ?? {};
  const args = resolveCommand({ entrypoint: imageConfig.Entrypoint, cmd: imageConfig.Cmd }, config.command, config.args);
  if (args.length === 0) {
    throw new StatusError(status.INVALID_ARGUMENT, `container ${config.metadata?.name}: no command: the image has no Entrypoint or Cmd and the config gives no command or args`);
  }
  const env = mergeEnv(
    sandbox.hostname,
    imageConfig.Env ?? [],
    config.envs.map((e) => ({ key: e.key, value: Buffer.from(e.value).toString('utf8') })),
  );
  const privileged = security?.privileged ?? false;
  const readonlyRootfs = security?.readonly_rootfs ?? false;
  const oom = linux?.resources?.oom_score_adj;
  const input: ContainerSpecInput = {
    rootfs: p.rootfs,
    readonlyRootfs: rootfsProtection(privileged, readonlyRootfs).runcReadonly,
    args,
    env,
    cwd: config.working_dir || imageConfig.WorkingDir || '/',
    user: { uid: p.user.uid, gid: p.user.gid, additionalGids: p.user.additionalGids },
    terminal: config.tty,
    mounts: p.mounts,
    extraMounts: podFileMounts(sandbox, p.sandboxPaths, p.mounts, readonlyRootfs),
    namespaces: containerNamespaces(sandbox, p.sandboxPaths, security?.namespace_options ?? null, p.targetPid),
    ...(sandbox.userns ? { idMappings: sandbox.userns } : {}),
    cgroupsPath: p.cgroupsPath,
    capabilities: { add: security?.capabilities?.add_capabilities ?? [], drop: security?.capabilities?.drop_capabilities ?? [] },
    privileged,
    noNewPrivileges: security?.no_new_privs ?? false,
    devices: p.devices,
    hostDevices: p.hostDevices,
    seccomp: p.seccomp,
    apparmor: apparmorFor(security?.apparmor ?? null, security?.apparmor_profile ?? ''),
    annotations: {
      ...config.annotations,
      'io.kubernetes.cri.container-type': 'container',
      'io.kubernetes.cri.container-name': config.metadata?.name ?? '',
      'io.kubernetes.cri.sandbox-id': sandbox.id,
    },
  };
  const resources = resourcesOf(linux?.resources ?? null);
  if (resources) input.resources = resources;
  if (oom !== undefined) input.oomScoreAdj = Number(oom);
  // An empty list from the kubelet still means the defaults; only privileged containers see everything.
  if (security?.masked_paths && security.masked_paths.length > 0) input.maskedPaths = [...security.masked_paths];
  if (security?.readonly_paths && security.readonly_paths.length > 0) input.readonlyPaths = [...security.readonly_paths];
  return input;
}
