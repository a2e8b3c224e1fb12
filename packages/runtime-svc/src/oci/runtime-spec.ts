/**
 * The parts of the OCI runtime-spec (config.json, version 1.0.2) that Skiff writes.
 * Field names follow the specification exactly because the object is serialised as-is.
 */

import type { OciCapabilities, OciProcess, OciRlimit } from '@skiff/common';

export const OCI_VERSION = '1.0.2';

export interface Spec {
  ociVersion: string;
  process: Process;
  root: { path: string; readonly?: boolean };
  hostname?: string;
  mounts: Mount[];
  annotations?: Record<string, string>;
  hooks?: Hooks;
  linux: Linux;
}

export interface Hook {
  path: string;
  args?: string[];
  env?: string[];
  timeout?: number;
}

export interface Hooks {
  prestart?: Hook[];
  createRuntime?: Hook[];
  createContainer?: Hook[];
  startContainer?: Hook[];
  poststart?: Hook[];
  poststop?: Hook[];
}

/** The process, its capabilities and rlimits: the type the Exec contract carries to stream-svc. */
export type Process = OciProcess;
export type Capabilities = OciCapabilities;
export type Rlimit = OciRlimit;

export interface Mount {
  destination: string;
  type?: string;
  source?: string;
  options?: string[];
  /** An id-mapped bind mount (runtime-spec 1.1; runc 1.2+): the mapping of the source's owners. */
  uidMappings?: IdMapping[];
  gidMappings?: IdMapping[];
}

export type NamespaceType = 'pid' | 'network' | 'mount' | 'ipc' | 'uts' | 'user' | 'cgroup';

export interface Namespace {
  type: NamespaceType;
  path?: string;
}

export interface Device {
  type: 'c' | 'b' | 'u' | 'p';
  path: string;
  major?: number;
  minor?: number;
  fileMode?: number;
  uid?: number;
  gid?: number;
}

export interface DeviceCgroupRule {
  allow: boolean;
  type?: 'a' | 'c' | 'b';
  major?: number;
  minor?: number;
  access?: string;
}

export interface LinuxResources {
  devices?: DeviceCgroupRule[];
  memory?: { limit?: number; reservation?: number; swap?: number; swappiness?: number; disableOOMKiller?: boolean };
  cpu?: { shares?: number; quota?: number; period?: number; realtimeRuntime?: number; realtimePeriod?: number; cpus?: string; mems?: string };
  pids?: { limit: number };
  hugepageLimits?: { pageSize: string; limit: number }[];
  unified?: Record<string, string>;
}

export type SeccompAction =
  | 'SCMP_ACT_KILL'
  | 'SCMP_ACT_KILL_PROCESS'
  | 'SCMP_ACT_KILL_THREAD'
  | 'SCMP_ACT_TRAP'
  | 'SCMP_ACT_ERRNO'
  | 'SCMP_ACT_TRACE'
  | 'SCMP_ACT_ALLOW'
  | 'SCMP_ACT_LOG';

export interface SeccompArg {
  index: number;
  value: number;
  valueTwo?: number;
  op: 'SCMP_CMP_NE' | 'SCMP_CMP_LT' | 'SCMP_CMP_LE' | 'SCMP_CMP_EQ' | 'SCMP_CMP_GE' | 'SCMP_CMP_GT' | 'SCMP_CMP_MASKED_EQ';
}

export interface SeccompSyscall {
  names: string[];
  action: SeccompAction;
  errnoRet?: number;
  args?: SeccompArg[];
}

export interface Seccomp {
  defaultAction: SeccompAction;
  defaultErrnoRet?: number;
  architectures?: string[];
  flags?: string[];
  syscalls?: SeccompSyscall[];
}

export interface IdMapping {
  containerID: number;
  hostID: number;
  size: number;
}

export interface Linux {
  namespaces: Namespace[];
  uidMappings?: IdMapping[];
  gidMappings?: IdMapping[];
  cgroupsPath?: string;
  resources?: LinuxResources;
  devices?: Device[];
  sysctl?: Record<string, string>;
  seccomp?: Seccomp;
  rootfsPropagation?: 'private' | 'rprivate' | 'slave' | 'rslave' | 'shared' | 'rshared';
  maskedPaths?: string[];
  readonlyPaths?: string[];
  mountLabel?: string;
}
