import { status } from '@grpc/grpc-js';
import { runCommand, StatusError } from '@skiff/common';

/**
 * runsc applies no sysctl of a spec. Its pods use the host kernel's network stack in their own
 * network namespace (--network=host there), so their net.* sysctls are written into that
 * namespace by Skiff; the others belong to gVisor's kernel, which offers no way to set them.
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

/** Writes the pod's net.* sysctls in its network namespace, from a process that has joined it. */
export async function writeNetworkSysctls(netnsPath: string, sysctls: Readonly<Record<string, string>>): Promise<void> {
  for (const [name, value] of Object.entries(sysctls)) {
    if (!isNetworkSysctl(name)) continue;
    const result = await runCommand('nsenter', [`--net=${netnsPath}`, '--', 'tee', sysctlFile(name)], { input: value, timeoutMs: 10_000 });
    if (result.code !== 0) throw new StatusError(status.INVALID_ARGUMENT, `setting sysctl ${name}=${value} in the pod's network namespace failed: ${result.stderr.trim() || `exit ${result.code}`}`);
  }
}
