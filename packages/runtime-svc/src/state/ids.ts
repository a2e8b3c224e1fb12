import { randomBytes } from 'node:crypto';

/** Sandbox and container ids: 64 random hex digits, like the ids the kubelet is used to. */
export function newId(): string {
  return randomBytes(32).toString('hex');
}

export const FULL_ID = /^[0-9a-f]{64}$/;
