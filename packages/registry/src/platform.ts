import { isManifestMediaType } from './media-types.js';
import type { Descriptor, Platform } from './types.js';

const NODE_ARCH_TO_OCI: Record<string, string> = {
  x64: 'amd64',
  arm64: 'arm64',
  arm: 'arm',
  ia32: '386',
  ppc64: 'ppc64le', // Node's Linux ppc64 builds are little-endian
  s390x: 's390x',
  riscv64: 'riscv64',
  loong64: 'loong64',
  mips64el: 'mips64le',
  mipsel: 'mipsle',
};

/**
 * Variants an architecture can run, oldest first: a CPU of one variant runs images built
 * for it or any earlier one. Absent architectures need an exact variant match.
 */
const VARIANT_ORDER: Record<string, readonly string[]> = {
  arm: ['v5', 'v6', 'v7', 'v8'],
  arm64: ['v8', 'v8.1', 'v8.2', 'v8.3', 'v8.4', 'v8.5', 'v8.6', 'v8.7', 'v8.8', 'v8.9', 'v9', 'v9.1', 'v9.2', 'v9.3', 'v9.4', 'v9.5'],
  amd64: ['', 'v2', 'v3', 'v4'],
};

/** linux/<this machine's architecture> (arm64 as v8, arm with the variant Node was built for). */
export function defaultPlatform(): Platform {
  const architecture = NODE_ARCH_TO_OCI[process.arch] ?? process.arch;
  const platform: Platform = { os: 'linux', architecture };
  if (architecture === 'arm64') platform.variant = 'v8';
  if (architecture === 'arm') {
    const armVersion = (process.config.variables as unknown as Record<string, unknown>)['arm_version'];
    platform.variant = typeof armVersion === 'string' || typeof armVersion === 'number' ? `v${armVersion}` : 'v7';
  }
  return platform;
}

/** Canonical spelling, the way containerd normalizes platforms (x86_64 → amd64, aarch64 → arm64/v8, armhf → arm/v7, …). */
export function normalizePlatform(platform: Platform): Required<Platform> {
  const os = platform.os.toLowerCase();
  let architecture = platform.architecture.toLowerCase();
  let variant = (platform.variant ?? '').toLowerCase();
  switch (architecture) {
    case 'x86_64':
    case 'x86-64':
    case 'amd64':
      architecture = 'amd64';
      if (variant === 'v1') variant = '';
      break;
    case 'i386':
    case 'i686':
    case '386':
      architecture = '386';
      break;
    case 'aarch64':
    case 'arm64':
      architecture = 'arm64';
      if (variant === '' || variant === '8') variant = 'v8';
      break;
    case 'armhf':
      architecture = 'arm';
      variant = 'v7';
      break;
    case 'armel':
      architecture = 'arm';
      variant = 'v6';
      break;
    case 'arm':
      if (variant === '') variant = 'v7';
      else if (/^[5-8]$/.test(variant)) variant = `v${variant}`;
      break;
  }
  return { os, architecture, variant };
}

export function formatPlatform(platform: Platform): string {
  return [platform.os, platform.architecture, platform.variant].filter((p) => p !== undefined && p !== '').join('/');
}

/** How well `candidate` suits `wanted`: -1 if it cannot run, higher is better. */
export function platformScore(candidate: Platform, wanted: Platform): number {
  const c = normalizePlatform(candidate);
  const w = normalizePlatform(wanted);
  if (c.os !== w.os || c.architecture !== w.architecture) return -1;
  if (c.variant === w.variant) return 1000;
  const order = VARIANT_ORDER[w.architecture];
  if (!order) return -1;
  const ci = order.indexOf(c.variant);
  const wi = order.indexOf(w.variant);
  if (ci < 0 || wi < 0 || ci > wi) return -1;
  return ci;
}

function isAttestation(descriptor: Descriptor): boolean {
  return descriptor.annotations?.['vnd.docker.reference.type'] === 'attestation-manifest';
}

/**
 * The index entry to pull for `wanted`: the best variant match, the earliest entry on a tie.
 * Entries without a platform, for an unknown platform, attestations, and non-manifest
 * artifacts are skipped.
 */
export function selectPlatformManifest(manifests: readonly Descriptor[], wanted: Platform): Descriptor | undefined {
  let best: Descriptor | undefined;
  let bestScore = -1;
  for (const descriptor of manifests) {
    if (!descriptor.platform || isAttestation(descriptor) || !isManifestMediaType(descriptor.mediaType)) continue;
    const score = platformScore(descriptor.platform, wanted);
    if (score > bestScore) {
      best = descriptor;
      bestScore = score;
    }
  }
  return best;
}

/** The platforms an index offers, for error messages. */
export function listPlatforms(manifests: readonly Descriptor[]): string[] {
  return manifests
    .filter((d) => d.platform && !isAttestation(d) && d.platform.os !== 'unknown')
    .map((d) => formatPlatform(d.platform!));
}
