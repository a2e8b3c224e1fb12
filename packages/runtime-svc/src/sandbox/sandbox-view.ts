import type { cri } from '@skiff/proto';
import type { SandboxRecord } from '../state/records.js';
import { appendMap, type EntryContent } from '../listing/list-entry-cache.js';

export function sandboxState(ready: boolean): cri.PodSandboxState__Output {
  return ready ? 'SANDBOX_READY' : 'SANDBOX_NOTREADY';
}

/** The ListPodSandbox entry of a sandbox. */
export function toCriSandbox(rec: SandboxRecord, ready: boolean): cri.PodSandbox {
  return {
    id: rec.id,
    metadata: rec.metadata,
    state: sandboxState(ready),
    created_at: rec.createdAt,
    labels: rec.labels,
    annotations: rec.annotations,
    runtime_handler: rec.runtimeHandler,
  };
}

/**
 * Every value toCriSandbox encodes, flat: while it is the same, so is the entry. (A test changes
 * each value the entry's encoding reads and checks that this changes too.)
 */
export function criSandboxContent(rec: SandboxRecord, ready: boolean): EntryContent {
  const m = rec.metadata;
  const content: (string | number)[] = [rec.id, m.name, m.uid, m.namespace, m.attempt, ready ? 1 : 0, rec.createdAt, rec.runtimeHandler];
  appendMap(content, rec.labels);
  appendMap(content, rec.annotations);
  return content;
}

export function toCriSandboxStatus(rec: SandboxRecord, ready: boolean): cri.PodSandboxStatus {
  const [primary, ...others] = rec.ips;
  return {
    id: rec.id,
    metadata: rec.metadata,
    state: sandboxState(ready),
    created_at: rec.createdAt,
    network: { ip: primary?.ip ?? '', additional_ips: others.map((ip) => ({ ip: ip.ip })) },
    linux: { namespaces: { options: { network: rec.namespaces.network, pid: rec.namespaces.pid, ipc: rec.namespaces.ipc, target_id: '' } } },
    labels: rec.labels,
    annotations: rec.annotations,
    runtime_handler: rec.runtimeHandler,
  };
}

/** The free-form details crictl inspectp shows. */
export function sandboxVerboseInfo(rec: SandboxRecord, bundle: string): Record<string, string> {
  return {
    info: JSON.stringify({
      // A pod without a pause has no process of its own: pid 0, and no cgroup of its own either.
      pause: !rec.pauseless,
      pid: rec.pid ?? 0,
      conmonPid: rec.conmonPid ?? 0,
      phase: rec.phase,
      bundle,
      netnsPath: rec.netnsPath ?? '',
      network: rec.network?.name ?? '',
      ips: rec.ips,
      portMappings: rec.portMappings,
      cgroupParent: rec.cgroupParent,
      cgroupsPath: rec.cgroupsPath,
      hostname: rec.hostname,
      dnsConfig: rec.dnsConfig,
      sysctls: rec.sysctls,
      privileged: rec.privileged,
      runtimeHandler: rec.runtimeHandler,
    }),
  };
}
