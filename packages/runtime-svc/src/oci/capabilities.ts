/** Linux capabilities by bit number (include/uapi/linux/capability.h). */
export const CAPABILITY_BITS: readonly string[] = [
  'CAP_CHOWN',
  'CAP_DAC_OVERRIDE',
  'CAP_DAC_READ_SEARCH',
  'CAP_FOWNER',
  'CAP_FSETID',
  'CAP_KILL',
  'CAP_SETGID',
  'CAP_SETUID',
  'CAP_SETPCAP',
  'CAP_LINUX_IMMUTABLE',
  'CAP_NET_BIND_SERVICE',
  'CAP_NET_BROADCAST',
  'CAP_NET_ADMIN',
  'CAP_NET_RAW',
  'CAP_IPC_LOCK',
  'CAP_IPC_OWNER',
  'CAP_SYS_MODULE',
  'CAP_SYS_RAWIO',
  'CAP_SYS_CHROOT',
  'CAP_SYS_PTRACE',
  'CAP_SYS_PACCT',
  'CAP_SYS_ADMIN',
  'CAP_SYS_BOOT',
  'CAP_SYS_NICE',
  'CAP_SYS_RESOURCE',
  'CAP_SYS_TIME',
  'CAP_SYS_TTY_CONFIG',
  'CAP_MKNOD',
  'CAP_LEASE',
  'CAP_AUDIT_WRITE',
  'CAP_AUDIT_CONTROL',
  'CAP_SETFCAP',
  'CAP_MAC_OVERRIDE',
  'CAP_MAC_ADMIN',
  'CAP_SYSLOG',
  'CAP_WAKE_ALARM',
  'CAP_BLOCK_SUSPEND',
  'CAP_AUDIT_READ',
  'CAP_PERFMON',
  'CAP_BPF',
  'CAP_CHECKPOINT_RESTORE',
];

/** What an unprivileged container gets when it asks for nothing (the set containerd and Docker use). */
export const DEFAULT_CAPABILITIES: readonly string[] = [
  'CAP_CHOWN',
  'CAP_DAC_OVERRIDE',
  'CAP_FSETID',
  'CAP_FOWNER',
  'CAP_MKNOD',
  'CAP_NET_RAW',
  'CAP_SETGID',
  'CAP_SETUID',
  'CAP_SETFCAP',
  'CAP_SETPCAP',
  'CAP_NET_BIND_SERVICE',
  'CAP_SYS_CHROOT',
  'CAP_KILL',
  'CAP_AUDIT_WRITE',
];

export class CapabilityError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'CapabilityError';
  }
}

/** Accepts the kubelet's spelling ("NET_ADMIN") and the kernel's ("CAP_NET_ADMIN"), any case. */
export function normalizeCapability(name: string): string {
  const upper = name.trim().toUpperCase();
  if (upper === 'ALL') return 'ALL';
  const full = upper.startsWith('CAP_') ? upper : `CAP_${upper}`;
  if (!CAPABILITY_BITS.includes(full)) {
    throw new CapabilityError(`unknown capability "${name}"; known: ${CAPABILITY_BITS.map((c) => c.slice(4)).join(', ')}`);
  }
  return full;
}

/** Decodes a CapBnd/CapEff mask as printed in /proc/<pid>/status (hex). */
export function capabilitiesFromMask(hexMask: string): string[] {
  const mask = BigInt(`0x${hexMask.trim()}`);
  return CAPABILITY_BITS.filter((_, bit) => (mask >> BigInt(bit)) & 1n);
}

/**
 * Applies CRI add/drop lists to the default set. "ALL" in add grants every capability the host
 * can grant; "ALL" in drop starts from nothing; named entries are then added and dropped.
 * The result never exceeds `grantable` (the daemon's bounding set): asking the kernel for a
 * capability outside it fails the container start.
 */
export function resolveCapabilities(
  add: readonly string[],
  drop: readonly string[],
  grantable: readonly string[],
  defaults: readonly string[] = DEFAULT_CAPABILITIES,
): string[] {
  const adds = add.map(normalizeCapability);
  const drops = drop.map(normalizeCapability);
  let caps = new Set<string>(defaults);
  if (adds.includes('ALL')) caps = new Set(CAPABILITY_BITS);
  if (drops.includes('ALL')) caps = new Set();
  for (const c of adds) if (c !== 'ALL') caps.add(c);
  for (const c of drops) if (c !== 'ALL') caps.delete(c);
  return CAPABILITY_BITS.filter((c) => caps.has(c) && grantable.includes(c));
}
