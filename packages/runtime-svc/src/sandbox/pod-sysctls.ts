import { status } from '@grpc/grpc-js';
import { runCommand, StatusError } from '@skiff/common';

/**
 * Sysctls Skiff writes itself, where no pause's `runc run` sets them: into the namespace each
 * belongs to, from a process that has joined it (the /proc/sys files of a namespaced sysctl are
 * the writer's namespace's).
 * - runsc applies no sysctl of a spec. Its pods use the host kernel's network stack in their own
 *   network namespace (--network=host there), so their net.* sysctls are written into that
 *   namespace; the others belong to gVisor's kernel, which offers no way to set them.
 * - A pod without a pause (pause-decision.ts): its net.* sysctls go into its network namespace,
 *   once CNI ADD has made its interfaces, and its IPC ones (kernel.shm*, kernel.msg*, kernel.sem,
 *   fs.mqueue.*) into the IPC namespace helpers/pod-ipc-uts.c made. The spec builder has checked
 *   the names (oci/spec-builder.ts) before anything was made.
 */
export function isNetworkSysctl(name: string): boolean {
  return name.startsWith('net.') || name.startsWith('net/');
}

/** The /proc/sys file of a sysctl: dots separate its parts, unless it is written with slashes. */
export function sysctlFile(name: string): string {
  const parts = name.includes('/') ? name.split('/') : name.split('.');
  if (parts.some((p) => p === '' || p === '.' || p === '..')) throw new Error(`sysctl name ${JSON.stringify(name)} is malformed`);
  return `/proc/sys/${parts.join('/')}`;
}

/**
 * Writes `sysctls` in the namespace of `kind` on the file `nsPath`, from a process that has joined
 * it, and the pod's user namespace first when it has one: the kernel lets only the root of the
 * user namespace that owns an IPC namespace write its sysctls, capabilities or not.
 */
async function writeSysctlsIn(kind: 'net' | 'ipc', nsPath: string, sysctls: readonly [string, string][], userns?: string): Promise<void> {
  const where = kind === 'net' ? 'network' : 'IPC';
  const join = [...(userns === undefined ? [] : [`--user=${userns}`]), `--${kind}=${nsPath}`];
  for (const [name, value] of sysctls) {
    const result = await runCommand('nsenter', [...join, '--', 'tee', sysctlFile(name)], { input: value, timeoutMs: 10_000 });
    if (result.code !== 0) throw new StatusError(status.INVALID_ARGUMENT, `setting sysctl ${name}=${value} in the pod's ${where} namespace failed: ${result.stderr.trim() || `exit ${result.code}`}`);
  }
}

/** Writes the pod's net.* sysctls in its network namespace. */
export async function writeNetworkSysctls(netnsPath: string, sysctls: Readonly<Record<string, string>>): Promise<void> {
  await writeSysctlsIn('net', netnsPath, Object.entries(sysctls).filter(([name]) => isNetworkSysctl(name)));
}

/**
 * Writes every sysctl of a pod without a pause: net.* in its network namespace, the others in its
 * IPC namespace, as the root of its user namespace (`userns`: its file) when it has one.
 */
export async function writePodSysctls(sysctls: Readonly<Record<string, string>>, namespaces: { netns: string | undefined; ipcns: string; userns: string | undefined }): Promise<void> {
  const entries = Object.entries(sysctls);
  const network = entries.filter(([name]) => isNetworkSysctl(name));
  const ipc = entries.filter(([name]) => !isNetworkSysctl(name));
  if (network.length > 0) {
    if (namespaces.netns === undefined) throw new StatusError(status.INVALID_ARGUMENT, `sysctls ${network.map(([name]) => name).join(', ')} need a network namespace of the pod's own`);
    await writeSysctlsIn('net', namespaces.netns, network, namespaces.userns);
  }
  await writeSysctlsIn('ipc', namespaces.ipcns, ipc, namespaces.userns);
}
