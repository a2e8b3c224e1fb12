import { parseReference } from '@skiff/reference';

/** A registries.conf prefix or location split into its parts: host[:port][/path][:tag|@digest]. */
export interface ParsedLocation {
  host: string;
  path: string;
  tag?: string;
  digest?: string;
}

const HOST_LABEL = '[a-zA-Z0-9](?:[a-zA-Z0-9-]*[a-zA-Z0-9])?';
const HOST_PATTERN = new RegExp(`^${HOST_LABEL}(?:\\.${HOST_LABEL})*(?::[0-9]{1,5})?$`);
const IPV6_HOST_PATTERN = /^\[[a-fA-F0-9:.%]+\](?::[0-9]{1,5})?$/;
// Only used to validate a path with the reference grammar; never contacted.
const PLACEHOLDER_HOST = 'placeholder.invalid';

export function isValidHost(host: string): boolean {
  return HOST_PATTERN.test(host) || IPV6_HOST_PATTERN.test(host);
}

/** Throws an Error whose message says what is wrong with `value`. */
export function parseLocation(value: string): ParsedLocation {
  if (value === '') throw new Error('must not be empty');
  if (/^[a-z]+:\/\//i.test(value)) throw new Error('must not have a URL scheme; write host[:port][/path] only');
  const slash = value.indexOf('/');
  const host = slash < 0 ? value : value.slice(0, slash);
  const rest = slash < 0 ? '' : value.slice(slash + 1);
  if (!isValidHost(host)) throw new Error(`${JSON.stringify(host)} is not a valid host[:port]`);
  if (rest === '') return { host, path: '' };
  let parsed;
  try {
    parsed = parseReference(`${PLACEHOLDER_HOST}/${rest}`);
  } catch {
    throw new Error(`${JSON.stringify(rest)} is not a valid repository path[:tag|@digest]`);
  }
  const location: ParsedLocation = { host, path: parsed.path };
  if (parsed.tag !== undefined) location.tag = parsed.tag;
  if (parsed.digest !== undefined) location.digest = parsed.digest;
  return location;
}

/** The host without its port, and without IPv6 brackets. */
export function hostName(host: string): string {
  if (host.startsWith('[')) return host.slice(1, host.indexOf(']'));
  const colon = host.lastIndexOf(':');
  return colon < 0 ? host : host.slice(0, colon);
}

/** localhost, 127.0.0.0/8 and ::1 are reached over plain HTTP. */
export function isLoopbackHost(host: string): boolean {
  const name = hostName(host).toLowerCase();
  if (name === 'localhost' || name.endsWith('.localhost')) return true;
  if (name === '::1' || name === '0:0:0:0:0:0:0:1') return true;
  return /^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(name);
}
