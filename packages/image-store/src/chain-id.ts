import { sha256Digest } from './digests.js';

/**
 * Chain IDs per the OCI image spec: the first equals the first diff ID; each next one is
 * sha256 of "<previous chain ID> <diff ID>". A chain ID names a layer together with everything below it.
 */
export function chainIds(diffIds: string[]): string[] {
  const out: string[] = [];
  for (const diffId of diffIds) {
    const previous = out[out.length - 1];
    out.push(previous === undefined ? diffId : sha256Digest(`${previous} ${diffId}`));
  }
  return out;
}

export function childChainId(parentChainId: string, diffId: string): string {
  return sha256Digest(`${parentChainId} ${diffId}`);
}
