import type { PodIdMappings } from '../sandbox/user-namespace.js';
import type { cri } from '@skiff/proto';
import type { CniNetworkConfig } from '../cni/config.js';
import type { PortMapping } from '../cni/cni.js';
import type { PodIp } from '../cni/result.js';

/** CRI namespace modes as the API spells them. */
export type NamespaceModeName = 'POD' | 'CONTAINER' | 'NODE' | 'TARGET';

/**
 * Lifecycle phases as persisted. `creating` and `removing` mark an operation under way: a record
 * found in one of them at start-up belongs to an operation a crash cut short.
 */
export type SandboxPhase = 'creating' | 'ready' | 'stopped' | 'removing';
export type ContainerPhase = 'creating' | 'created' | 'running' | 'exited' | 'removing';

export interface SandboxRecord {
  version: 1;
  id: string;
  /** The pod's own user namespace (made by its pause process); absent: the host's. */
  userns?: PodIdMappings;
  phase: SandboxPhase;
  metadata: { name: string; uid: string; namespace: string; attempt: number };
  /** Nanoseconds since the epoch, decimal. */
  createdAt: string;
  /** As requested ("" for the default). */
  runtimeHandler: string;
  labels: Record<string, string>;
  annotations: Record<string, string>;
  hostname: string;
  logDirectory: string;
  namespaces: { network: NamespaceModeName; pid: NamespaceModeName; ipc: NamespaceModeName };
  privileged: boolean;
  cgroupParent: string;
  /** runc's cgroupsPath for the sandbox container. */
  cgroupsPath: string;
  /** Whether the kubelet named the pod's cgroup (then it is the pod's own, and pod stats read it). */
  podCgroupGiven: boolean;
  sysctls: Record<string, string>;
  portMappings: PortMapping[];
  /** Set before CNI ADD runs, so a DEL can always be attempted with the same configuration. */
  network?: CniNetworkConfig;
  netnsPath?: string;
  ips: PodIp[];
  /** Pod-private /dev/shm (absent with the host IPC namespace). */
  shmMounted: boolean;
  /**
   * Run without a pause process (sandbox/pause-decision.ts): its IPC and UTS namespaces were made
   * on their files by helpers/pod-ipc-uts.c, it has no pid, and it is ready until stopped.
   * Absent in records of pods with a pause, and in every record written before pods could go
   * without one.
   */
  pauseless?: true;
  /** A pod without a pause whose namespaces were gone when the runtime started again (a reboot): not ready. */
  namespacesLost?: true;
  /** The pause process (catatonit), host pid namespace. */
  pid?: number;
  /** Its start time (clock ticks since boot, /proc/<pid>/stat): with the pid, it tells a recycled pid apart. */
  pidStartTime?: number;
  /** Only in records of sandboxes whose pause process was started under conmon (before it ran unmonitored). */
  conmonPid?: number;
  /** Verbatim, for verbose status. */
  dnsConfig: { servers: string[]; searches: string[]; options: string[] };
}

export interface ImageInfo {
  /** The reference the container config named. */
  requested: string;
  /** Image id (config digest). */
  id: string;
  /** Digest-qualified reference, or the id when the image has no repo digest. */
  ref: string;
  /** The reference reported in ContainerStatus.image. */
  display: string;
}

export interface ContainerRecord {
  version: 1;
  id: string;
  sandboxId: string;
  phase: ContainerPhase;
  metadata: { name: string; attempt: number };
  /** The name conmon and the journal know it by (k8s_<container>_<pod>_<namespace>_<uid>_<attempt>). */
  fullName: string;
  /** The name reservation it holds (see containerNameKey). */
  nameKey: string;
  runtimeHandler: string;
  image: ImageInfo;
  createdAt: string;
  startedAt?: string;
  finishedAt?: string;
  exitCode?: number;
  reason?: string;
  message?: string;
  labels: Record<string, string>;
  annotations: Record<string, string>;
  mounts: cri.Mount__Output[];
  /** Absolute path of the CRI log file, "" when the sandbox has no log directory. */
  logPath: string;
  resources: cri.LinuxContainerResources__Output | null;
  user: { uid: number; gid: number; supplementalGroups: number[] };
  /** Signal number StopContainer sends first. */
  stopSignal: number;
  criStopSignal: cri.Signal__Output;
  cgroupsPath: string;
  tty: boolean;
  stdin: boolean;
  stdinOnce: boolean;
  rootfsMounted: boolean;
  /**
   * The overlay is to be remounted read-only once runc has created the container (see
   * rootfs-protection.ts). Absent in records written before StartContainer created the container.
   */
  remountReadonly?: boolean;
  /** runc's init (conmon's "container pid"): set by StartContainer, absent while the container is only created. */
  pid?: number;
  /** Its start time (clock ticks since boot, /proc/<pid>/stat): with the pid, it tells a recycled pid apart. */
  pidStartTime?: number;
  conmonPid?: number;
  /** The container has a PID namespace of its own: SIGKILL to its init ends every process it has. */
  ownPidNamespace?: boolean;
}
