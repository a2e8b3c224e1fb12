import { podUserNamespace } from './user-namespace.js';
import { status } from '@grpc/grpc-js';
import { StatusError, type IdRange } from '@skiff/common';
import type { cri } from '@skiff/proto';
import type { PortMapping } from '../cni/cni.js';
import type { NamespaceModeName, SandboxRecord } from '../state/records.js';
import { cgroupsPathFor, type CgroupDriver } from '../cgroups/cgroups.js';

const PROTOCOLS: Record<string, PortMapping['protocol']> = { TCP: 'tcp', UDP: 'udp', SCTP: 'sctp' };

/** CRI port mappings with a host port, in the CNI portMappings form. */
export function portMappingsOf(mappings: readonly cri.PortMapping__Output[]): PortMapping[] {
  const out: PortMapping[] = [];
  for (const m of mappings) {
    if (!m.host_port || m.host_port <= 0) continue;
    if (m.host_port > 65535 || m.container_port <= 0 || m.container_port > 65535) {
      throw new StatusError(status.INVALID_ARGUMENT, `port mapping ${m.host_port}->${m.container_port}: ports must be between 1 and 65535`);
    }
    const protocol = PROTOCOLS[m.protocol] ?? 'tcp';
    out.push({ hostPort: m.host_port, containerPort: m.container_port, protocol, ...(m.host_ip ? { hostIP: m.host_ip } : {}) });
  }
  return out;
}

export interface SandboxDefaults {
  cgroupParent: string;
  cgroupDriver: CgroupDriver;
  /** Host ids pods' user namespaces may map (runtime.userns_id_range); any from 65536 up when undefined. */
  usernsIdRange?: IdRange | undefined;
  /** runtime.default_handler: the handler of a pod that names none. */
  defaultHandler: string;
}

/**
 * The record of a new sandbox from RunPodSandbox's request: validated, defaults filled in, nothing
 * made yet (phase "creating").
 */
export function sandboxRecordFromRequest(id: string, request: cri.RunPodSandboxRequest__Output, defaults: SandboxDefaults, createdAt: string): SandboxRecord {
  const config = request.config;
  if (!config) throw new StatusError(status.INVALID_ARGUMENT, 'RunPodSandbox: config is required');
  const meta = config.metadata;
  const missing = ['name', 'namespace', 'uid'].filter((k) => !meta?.[k as 'name' | 'namespace' | 'uid']);
  if (!meta || missing.length > 0) {
    throw new StatusError(status.INVALID_ARGUMENT, `RunPodSandbox: config.metadata.${missing.join(', ') || 'name'} is required`);
  }
  const linux = config.linux;
  const security = linux?.security_context ?? null;
  const ns = security?.namespace_options ?? null;
  const userns = podUserNamespace(ns?.userns_options, defaults.usernsIdRange);
  const namespaces: SandboxRecord['namespaces'] = {
    network: (ns?.network ?? 'POD') as NamespaceModeName,
    pid: (ns?.pid ?? 'POD') as NamespaceModeName,
    ipc: (ns?.ipc ?? 'POD') as NamespaceModeName,
  };
  for (const [kind, mode] of Object.entries(namespaces)) {
    if (mode === 'TARGET') throw new StatusError(status.INVALID_ARGUMENT, `RunPodSandbox: ${kind} namespace mode TARGET applies to containers, not sandboxes`);
  }
  const hostNetwork = namespaces.network === 'NODE';
  if (userns && hostNetwork) {
    throw new StatusError(status.INVALID_ARGUMENT, 'RunPodSandbox: a pod with its own user namespace cannot use the host network here (user_namespaces_host_network is false)');
  }
  const hostname = config.hostname || (hostNetwork ? '' : meta.name.slice(0, 63));
  // The kernel's limit is 64 bytes; the name goes to sethostname(2) on a command line, where a NUL cannot.
  if (Buffer.byteLength(hostname) > 64 || /[\s/\p{Cc}\p{Cs}]/u.test(hostname)) {
    throw new StatusError(status.INVALID_ARGUMENT, `RunPodSandbox: hostname ${JSON.stringify(hostname)} is not a valid host name (at most 64 bytes, no spaces, control characters or '/')`);
  }
  const cgroupParent = linux?.cgroup_parent || defaults.cgroupParent;
  const dns = config.dns_config;
  return {
    version: 1,
    id,
    phase: 'creating',
    metadata: { name: meta.name, uid: meta.uid, namespace: meta.namespace, attempt: meta.attempt },
    createdAt,
    // The handler that runs the pod is recorded, so that a later change of the default never
    // hands an existing pod to another runtime.
    runtimeHandler: request.runtime_handler || (defaults.defaultHandler === 'runc' ? '' : defaults.defaultHandler),
    labels: { ...config.labels },
    annotations: { ...config.annotations },
    hostname,
    logDirectory: config.log_directory,
    namespaces,
    privileged: security?.privileged ?? false,
    cgroupParent,
    cgroupsPath: cgroupsPathFor(defaults.cgroupDriver, cgroupParent, id),
    podCgroupGiven: Boolean(linux?.cgroup_parent),
    sysctls: { ...(linux?.sysctls ?? {}) },
    portMappings: hostNetwork ? [] : portMappingsOf(config.port_mappings),
    ips: [],
    shmMounted: false,
    dnsConfig: { servers: [...(dns?.servers ?? [])], searches: [...(dns?.searches ?? [])], options: [...(dns?.options ?? [])] },
    ...(userns ? { userns } : {}),
  };
}
