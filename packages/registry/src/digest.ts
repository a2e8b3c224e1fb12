import { createHash } from 'node:crypto';
import { parseDigest } from '@skiff/reference';
import { RegistryError } from './errors.js';

/** "sha256:<hex>" of `bytes`, or of another algorithm the reference grammar allows. */
export function computeDigest(bytes: Buffer, algorithm: 'sha256' | 'sha384' | 'sha512' = 'sha256'): string {
  return `${algorithm}:${createHash(algorithm).update(bytes).digest('hex')}`;
}

/** Throws RegistryError 'digest-mismatch' unless `bytes` hash to `expected`. */
export function verifyDigest(bytes: Buffer, expected: string, what: string): void {
  const parsed = parseDigest(expected);
  if (!parsed) throw new RegistryError('protocol', `cannot verify ${what}: malformed digest ${JSON.stringify(expected)}`);
  const actual = computeDigest(bytes, parsed.algorithm);
  if (actual !== expected) {
    throw new RegistryError('digest-mismatch', `${what}: content has digest ${actual}, expected ${expected}`);
  }
}
