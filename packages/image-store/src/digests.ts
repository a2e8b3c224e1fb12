import { createHash } from 'node:crypto';
import { parseDigest } from '@skiff/reference';
import { StoreError } from './errors.js';

export function sha256Digest(data: string | Uint8Array): string {
  return `sha256:${createHash('sha256').update(data).digest('hex')}`;
}

/**
 * The hex part of a sha256 digest, which names files in the store. Other algorithms are refused:
 * the on-disk layout has only a sha256 tree.
 */
export function sha256Hex(digest: string, what: string): string {
  const parsed = parseDigest(digest);
  if (!parsed) throw new StoreError('unsupported', `${what} ${JSON.stringify(digest)} is not a valid digest (want sha256:<64 hex digits>)`);
  if (parsed.algorithm !== 'sha256') throw new StoreError('unsupported', `${what} ${digest} uses ${parsed.algorithm}; the image store only holds sha256 content`);
  return parsed.hex;
}
