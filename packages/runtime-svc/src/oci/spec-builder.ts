import { resolveCapabilities } from './capabilities.js';
import type { ResolvedDevice } from './devices.js';
import { APPARMOR_DEFAULT_PROFILE, type HostFacts } from './host-facts.js';
import {
  OCI_VERSION,
  type Capabilities,
  type DeviceCgroupRule,
  type IdMapping,
  type Hooks,
  type Linux,
  type LinuxResources,
  type Mount,
  type Namespace,
  type NamespaceType,
  type Process,
  type Rlimit,
  type Seccomp,
  type Spec,
} from './runtime-spec.js';
import { runtimeDefaultSeccompProfile } from './seccomp-default.js';

/** `new`: a namespace of its own; `join`: enter an existing one (a sandbox's); `host`: the host's. */
export type NamespaceMode = { mode: 'new' } | { mode: 'join'; path: string } | { mode: 'host' };

export interface NamespacesInput {
  /** The host's unless given: a new one needs `idMappings`. */
  user?: NamespaceMode;
  network?: NamespaceMode;
  ipc?: NamespaceMode;
  uts?: NamespaceMode;
  pid?: NamespaceMode;
}

export type MountPropagation = 'private' | 'rslave' | 'rshared';

/** A host path bind-mounted into the container (CRI Mount). */
export interface BindMountInput {
  containerPath: string;
  hostPath: string;
  readonly?: boolean;
  /** Read-only submounts too: runc's `rro`, made with mount_setattr(2) in the container's mount namespace. */
  recursiveReadonly?: boolean;
  /**
   * Further mount options (BIND_MOUNT_OPTIONS): runc applies them with its remount, so flags a
   * source has (nosuid, nodev, noexec) are restated here to survive a read-only remount.
   */
  options?: string[];
  propagation?: MountPropagation;
}

export interface ResourcesInput {
  cpuShares?: number;
  cpuQuota?: number;
  cpuPeriod?: number;
  cpusetCpus?: string;
  cpusetMems?: string;
  memoryLimitBytes?: number;
  memorySwapLimitBytes?: number;
  /** pageSize as the kernel names it: "2MB", "1GB". */
  hugepageLimits?: { pageSize: string; limitBytes: number }[];
  pidsLimit?: number;
  unified?: Record<string, string>;
}

export type SeccompInput = { kind: 'runtime-default' } | { kind: 'unconfined' } | { kind: 'localhost'; profile: Seccomp };
export type ApparmorInput = { kind: 'runtime-default' } | { kind: 'unconfined' } | { kind: 'localhost'; name: string };

export interface ContainerSpecInput {
  rootfs: string;
  readonlyRootfs?: boolean;
  args: string[];
  env?: string[];
  cwd?: string;
  user?: { uid: number; gid: number; additionalGids?: number[]; umask?: number };
  terminal?: boolean;
  rlimits?: Rlimit[];
  /** Applied only when the container has its own UTS namespace. */
  hostname?: string;
  mounts?: BindMountInput[];
  /** Mounts given verbatim (tmpfs, a sandbox's /dev/shm, ...); they go after the bind mounts. */
  extraMounts?: Mount[];
  namespaces?: NamespacesInput;
  /** The pod's user namespace mappings: of a new user namespace, or of the one joined (for id-mapped mounts). */
  idMappings?: { uid: IdMapping; gid: IdMapping };
  cgroupsPath?: string;
  resources?: ResourcesInput;
  /** Raised to the daemon's own value when lower: the kernel refuses to go below it here. */
  oomScoreAdj?: number;
  capabilities?: { add?: string[]; drop?: string[] };
  privileged?: boolean;
  noNewPrivileges?: boolean;
  /** Replace the default masked / read-only /proc and /sys paths when given. */
  maskedPaths?: string[];
  readonlyPaths?: string[];
  devices?: ResolvedDevice[];
  /** For privileged containers: every host device (see listHostDevices). */
  hostDevices?: ResolvedDevice[];
  sysctls?: Record<string, string>;
  /** Absent means unconfined, as CRI defines it. Privileged containers are never confined. */
  seccomp?: SeccompInput;
  apparmor?: ApparmorInput;
  annotations?: Record<string, string>;
  /** OCI hooks (from CDI devices). */
  hooks?: Hooks;
}

export class SpecError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'SpecError';
  }
}

export const DEFAULT_PATH_ENV = 'PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin';

export const DEFAULT_MASKED_PATHS: readonly string[] = [
  '/proc/acpi',
  '/proc/asound',
  '/proc/kcore',
  '/proc/keys',
  '/proc/latency_stats',
  '/proc/timer_list',
  '/proc/timer_stats',
  '/proc/sched_debug',
  '/proc/scsi',
  '/sys/firmware',
  '/sys/devices/virtual/powercap',
];

export const DEFAULT_READONLY_PATHS: readonly string[] = ['/proc/bus', '/proc/fs', '/proc/irq', '/proc/sys', '/proc/sysrq-trigger'];

function defaultMounts(privileged: boolean): Mount[] {
  const sysOptions = ['nosuid', 'noexec', 'nodev', privileged ? 'rw' : 'ro'];
  return [
    { destination: '/proc', type: 'proc', source: 'proc', options: ['nosuid', 'noexec', 'nodev'] },
    { destination: '/dev', type: 'tmpfs', source: 'tmpfs', options: ['nosuid', 'strictatime', 'mode=755', 'size=65536k'] },
    {
      destination: '/dev/pts',
      type: 'devpts',
      source: 'devpts',
      options: ['nosuid', 'noexec', 'newinstance', 'ptmxmode=0666', 'mode=0620', 'gid=5'],
    },
    { destination: '/dev/mqueue', type: 'mqueue', source: 'mqueue', options: ['nosuid', 'noexec', 'nodev'] },
    { destination: '/dev/shm', type: 'tmpfs', source: 'shm', options: ['nosuid', 'noexec', 'nodev', 'mode=1777', 'size=65536k'] },
    { destination: '/sys', type: 'sysfs', source: 'sysfs', options: sysOptions },
    { destination: '/sys/fs/cgroup', type: 'cgroup', source: 'cgroup', options: [...sysOptions.slice(0, 3), 'relatime', sysOptions[3]!] },
  ];
}

function cleanPath(p: string): string {
  const parts = p.split('/').filter((s) => s && s !== '.');
  return `/${parts.join('/')}`;
}

/** The options runc applies to a bind mount (with its remount); anything else would be ignored silently. */
export const BIND_MOUNT_OPTIONS: ReadonlySet<string> = new Set([
  'ro', 'rw', 'nosuid', 'suid', 'nodev', 'dev', 'noexec', 'exec', 'sync', 'async', 'dirsync',
  'noatime', 'atime', 'nodiratime', 'diratime', 'relatime', 'norelatime', 'strictatime', 'nostrictatime',
]);

function bindMount(m: BindMountInput): Mount {
  const unknown = (m.options ?? []).filter((o) => !BIND_MOUNT_OPTIONS.has(o));
  if (unknown.length > 0) throw new SpecError(`mount ${m.containerPath}: mount options ${unknown.join(', ')} are not supported for bind mounts (supported: ${[...BIND_MOUNT_OPTIONS].join(', ')})`);
  if (!m.containerPath.startsWith('/')) throw new SpecError(`mount destination "${m.containerPath}" must be an absolute path`);
  if (!m.hostPath.startsWith('/')) throw new SpecError(`mount source "${m.hostPath}" for ${m.containerPath} must be an absolute path`);
  const propagation = m.propagation ?? 'private';
  const options = ['rbind', propagation === 'private' ? 'rprivate' : propagation, m.readonly ? 'ro' : 'rw', ...(m.recursiveReadonly ? ['rro'] : []), ...(m.options ?? [])];
  return { destination: cleanPath(m.containerPath), type: 'bind', source: m.hostPath, options };
}

function buildMounts(input: ContainerSpecInput, privileged: boolean): Mount[] {
  const user = [...(input.mounts ?? []).map(bindMount), ...(input.extraMounts ?? [])];
  const userDestinations = new Set(user.map((m) => cleanPath(m.destination)));
  const base = defaultMounts(privileged).filter((m) => !userDestinations.has(m.destination));
  // Parents before children, so a mount is not hidden by one made later on a path above it.
  const depth = (m: Mount): number => cleanPath(m.destination).split('/').length;
  const sortedUser = user.map((m, i) => ({ m, i })).sort((a, b) => depth(a.m) - depth(b.m) || a.i - b.i).map((x) => x.m);
  return [...base, ...sortedUser];
}

function rootfsPropagation(mounts: readonly BindMountInput[]): Linux['rootfsPropagation'] {
  if (mounts.some((m) => m.propagation === 'rshared')) return 'rshared';
  if (mounts.some((m) => m.propagation === 'rslave')) return 'rslave';
  return undefined;
}

function buildNamespaces(ns: NamespacesInput): Namespace[] {
  const out: Namespace[] = [{ type: 'mount' }];
  const entries: [NamespaceType, NamespaceMode | undefined][] = [
    ['user', ns.user ?? { mode: 'host' }],
    ['network', ns.network],
    ['ipc', ns.ipc],
    ['uts', ns.uts],
    ['pid', ns.pid],
  ];
  for (const [type, mode] of entries) {
    const m = mode ?? { mode: 'new' };
    if (m.mode === 'host') continue;
    if (m.mode === 'join') {
      if (!m.path.startsWith('/')) throw new SpecError(`${type} namespace path "${m.path}" must be absolute`);
      out.push({ type, path: m.path });
    } else {
      out.push({ type });
    }
  }
  return out;
}

const IPC_SYSCTL = /^(kernel\.(shm(all|max|mni)|shm_rmid_forced|msg(max|mnb|mni)|sem)|fs\.mqueue\..+)$/;

function validateSysctls(sysctls: Record<string, string>, ns: NamespacesInput): void {
  for (const name of Object.keys(sysctls)) {
    if (name.startsWith('net.')) {
      if (ns.network?.mode === 'host') throw new SpecError(`sysctl ${name} cannot be set for a container in the host network namespace`);
    } else if (IPC_SYSCTL.test(name)) {
      if (ns.ipc?.mode === 'host') throw new SpecError(`sysctl ${name} cannot be set for a container in the host IPC namespace`);
    } else if (name === 'kernel.hostname' || name === 'kernel.domainname') {
      throw new SpecError(`sysctl ${name} is set through the pod's hostname, not as a sysctl`);
    } else {
      throw new SpecError(`sysctl ${name} is not namespaced: setting it would change the whole node`);
    }
  }
}

function buildResources(r: ResourcesInput | undefined, facts: HostFacts, privileged: boolean, devices: readonly ResolvedDevice[]): LinuxResources {
  const deviceRules: DeviceCgroupRule[] = privileged
    ? [{ allow: true, access: 'rwm' }]
    : [
        { allow: false, access: 'rwm' },
        ...devices.map(
          (d): DeviceCgroupRule => ({
            allow: true,
            type: d.device.type === 'b' ? 'b' : 'c',
            major: d.device.major,
            minor: d.device.minor,
            access: d.access,
          }),
        ),
      ];
  return { devices: deviceRules, ...(r ? resourceLimits(r, facts) : {}) };
}

/**
 * The cgroup limits of a resources request, without device rules: what a container is created with
 * and what `runc update` applies later.
 */
export function resourceLimits(r: ResourcesInput, facts: HostFacts): Omit<LinuxResources, 'devices'> {
  const out: Omit<LinuxResources, 'devices'> = {};
  const cpu: NonNullable<LinuxResources['cpu']> = {};
  if (r.cpuShares) cpu.shares = r.cpuShares;
  if (r.cpuQuota) cpu.quota = r.cpuQuota;
  if (r.cpuPeriod) cpu.period = r.cpuPeriod;
  if (r.cpusetCpus) cpu.cpus = r.cpusetCpus;
  if (r.cpusetMems) cpu.mems = r.cpusetMems;
  if (Object.keys(cpu).length > 0) out.cpu = cpu;

  if (r.memoryLimitBytes) {
    out.memory = { limit: r.memoryLimitBytes };
    if (r.memorySwapLimitBytes) {
      if (r.memorySwapLimitBytes < r.memoryLimitBytes) {
        throw new SpecError(`memory+swap limit ${r.memorySwapLimitBytes} is below the memory limit ${r.memoryLimitBytes}`);
      }
      out.memory.swap = r.memorySwapLimitBytes;
    }
  }
  if (r.pidsLimit && r.pidsLimit > 0) out.pids = { limit: r.pidsLimit };
  // runc refuses to start a container whose hugetlb limit it cannot apply; a host without the
  // controller cannot enforce one anyway.
  const hugetlb = facts.cgroupVersion === 2 || facts.cgroupV1Controllers.includes('hugetlb');
  if (r.hugepageLimits && r.hugepageLimits.length > 0 && hugetlb) {
    out.hugepageLimits = r.hugepageLimits.map((h) => ({ pageSize: h.pageSize, limit: h.limitBytes }));
  }
  if (r.unified && Object.keys(r.unified).length > 0) {
    if (facts.cgroupVersion !== 2) throw new SpecError('unified cgroup resources need a cgroup v2 host; this host uses cgroup v1');
    out.unified = { ...r.unified };
  }
  return out;
}

function buildCapabilities(input: ContainerSpecInput, facts: HostFacts): string[] {
  if (input.privileged) return [...facts.boundingCapabilities];
  return resolveCapabilities(input.capabilities?.add ?? [], input.capabilities?.drop ?? [], facts.boundingCapabilities);
}

function buildSeccomp(input: ContainerSpecInput, caps: string[]): Seccomp | undefined {
  if (input.privileged) return undefined;
  const s = input.seccomp ?? { kind: 'unconfined' };
  switch (s.kind) {
    case 'unconfined':
      return undefined;
    case 'runtime-default':
      return runtimeDefaultSeccompProfile(caps);
    case 'localhost':
      return s.profile;
  }
}

function buildApparmor(input: ContainerSpecInput, facts: HostFacts): string | undefined {
  const a = input.apparmor;
  if (input.privileged || !a || a.kind === 'unconfined') return undefined;
  if (!facts.apparmorEnabled) {
    if (a.kind === 'localhost') throw new SpecError(`AppArmor profile "${a.name}" requested but AppArmor is not enabled on this host`);
    return undefined;
  }
  if (a.kind === 'localhost') return a.name;
  return facts.apparmorDefaultProfileLoaded ? APPARMOR_DEFAULT_PROFILE : undefined;
}

function checkRlimits(rlimits: readonly Rlimit[], facts: HostFacts): void {
  if (facts.boundingCapabilities.includes('CAP_SYS_RESOURCE') || !facts.hardRlimits) return;
  for (const r of rlimits) {
    if (r.soft > r.hard) throw new SpecError(`rlimit ${r.type}: soft limit ${r.soft} is above the hard limit ${r.hard}`);
    const ceiling = facts.hardRlimits[r.type];
    if (ceiling !== undefined && r.hard > ceiling) {
      throw new SpecError(
        `rlimit ${r.type} hard limit ${r.hard} is above the runtime's own (${ceiling}) and this host gives no CAP_SYS_RESOURCE to raise it; ` +
          'lower the request or raise the limit of the skiff service',
      );
    }
  }
}

function clampOomScoreAdj(requested: number | undefined, floor: number): number | undefined {
  if (requested === undefined) return undefined;
  return Math.min(1000, Math.max(requested, floor, -1000));
}

/**
 * Builds config.json for one container. Pure: everything it needs from the machine comes in
 * `facts`, so the same input always gives the same spec.
 */
export function buildSpec(input: ContainerSpecInput, facts: HostFacts): Spec {
  if (input.args.length === 0) throw new SpecError('the container has no command: args is empty');
  const privileged = input.privileged ?? false;
  const ns = input.namespaces ?? {};
  const sysctls = input.sysctls ?? {};
  validateSysctls(sysctls, ns);

  const env = [...(input.env ?? [])];
  if (!env.some((e) => e.startsWith('PATH='))) env.unshift(DEFAULT_PATH_ENV);
  if (input.terminal && !env.some((e) => e.startsWith('TERM='))) env.push('TERM=xterm');

  const capList = buildCapabilities(input, facts);
  const capabilities: Capabilities = { bounding: capList, effective: [...capList], permitted: [...capList] };

  const user = input.user ?? { uid: 0, gid: 0 };
  const process: Process = {
    terminal: input.terminal ?? false,
    user: {
      uid: user.uid,
      gid: user.gid,
      // Sorted as Linux's setgroups keeps them: gVisor's kernel keeps the order it is given, so
      // getgroups (and `id -G`) would otherwise differ between runc and runsc containers.
      ...(user.additionalGids && user.additionalGids.length > 0 ? { additionalGids: [...user.additionalGids].sort((a, b) => a - b) } : {}),
      ...(user.umask !== undefined ? { umask: user.umask } : {}),
    },
    args: [...input.args],
    env,
    cwd: input.cwd || '/',
    capabilities,
    noNewPrivileges: input.noNewPrivileges ?? false,
  };
  if (input.rlimits && input.rlimits.length > 0) {
    checkRlimits(input.rlimits, facts);
    process.rlimits = input.rlimits.map((r) => ({ ...r }));
  }
  const oom = clampOomScoreAdj(input.oomScoreAdj, facts.oomScoreAdj);
  if (oom !== undefined) process.oomScoreAdj = oom;
  const apparmor = buildApparmor(input, facts);
  if (apparmor) process.apparmorProfile = apparmor;

  const devices = privileged ? [...(input.hostDevices ?? []), ...(input.devices ?? [])] : [...(input.devices ?? [])];
  const linux: Linux = {
    namespaces: buildNamespaces(ns),
    resources: buildResources(input.resources, facts, privileged, devices),
  };
  if (input.cgroupsPath) linux.cgroupsPath = input.cgroupsPath;
  // A namespace joined by path is mapped already: runc reads its mappings from it and warns of (or,
  // when they differ, refuses) mappings listed beside the path.
  if (ns.user?.mode === 'new') {
    if (!input.idMappings) throw new SpecError('a user namespace needs uid and gid mappings');
    linux.uidMappings = [{ ...input.idMappings.uid }];
    linux.gidMappings = [{ ...input.idMappings.gid }];
  }
  if (devices.length > 0) linux.devices = devices.map((d) => ({ ...d.device }));
  if (Object.keys(sysctls).length > 0) linux.sysctl = { ...sysctls };
  const seccomp = buildSeccomp(input, capList);
  if (seccomp) linux.seccomp = seccomp;
  const propagation = rootfsPropagation(input.mounts ?? []);
  if (propagation) linux.rootfsPropagation = propagation;
  if (!privileged) {
    linux.maskedPaths = [...(input.maskedPaths ?? DEFAULT_MASKED_PATHS)];
    linux.readonlyPaths = [...(input.readonlyPaths ?? DEFAULT_READONLY_PATHS)];
  }

  const spec: Spec = {
    ociVersion: OCI_VERSION,
    process,
    root: { path: input.rootfs, readonly: input.readonlyRootfs ?? false },
    mounts: buildMounts(input, privileged),
    linux,
  };
  const utsMode = ns.uts?.mode ?? 'new';
  if (input.hostname && utsMode === 'new') spec.hostname = input.hostname;
  if (input.annotations && Object.keys(input.annotations).length > 0) spec.annotations = { ...input.annotations };
  if (input.hooks && Object.keys(input.hooks).length > 0) spec.hooks = input.hooks;
  return spec;
}
