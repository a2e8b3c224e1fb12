import { createHash } from 'node:crypto';
import type { AuthCredentials } from './types.js';

export interface BasicCredentials {
  username: string;
  password: string;
}

export class InvalidCredentialsError extends Error {}

/** username/password, or the base64 "user:password" `auth` field; undefined when neither is given. */
export function basicCredentials(credentials: AuthCredentials | undefined): BasicCredentials | undefined {
  if (!credentials) return undefined;
  if (credentials.username) return { username: credentials.username, password: credentials.password ?? '' };
  if (credentials.auth) {
    const decoded = Buffer.from(credentials.auth, 'base64').toString('utf8');
    const colon = decoded.indexOf(':');
    if (colon < 0) throw new InvalidCredentialsError('the "auth" credential is not base64 of "username:password"');
    return { username: decoded.slice(0, colon), password: decoded.slice(colon + 1) };
  }
  return undefined;
}

export function basicAuthorization(basic: BasicCredentials): string {
  return `Basic ${Buffer.from(`${basic.username}:${basic.password}`).toString('base64')}`;
}

export function hasCredentials(credentials: AuthCredentials | undefined): boolean {
  if (!credentials) return false;
  return Boolean(credentials.username || credentials.auth || credentials.identityToken || credentials.registryToken);
}

/** A key that tells credentials apart in caches without keeping them readable there. */
export function credentialsKey(credentials: AuthCredentials | undefined): string {
  if (!hasCredentials(credentials)) return 'anonymous';
  const c = credentials!;
  return createHash('sha256')
    .update(JSON.stringify([c.username ?? '', c.password ?? '', c.auth ?? '', c.identityToken ?? '', c.registryToken ?? '']))
    .digest('hex');
}
