import { formatReference, parseReference, type ImageReference } from '@skiff/reference';
import { RegistryError } from './errors.js';
import { isLoopbackHost } from './location.js';
import type { RegistriesConfig, RegistryEntry } from './registries-config.js';
import type { Endpoint } from './types.js';

// Docker Hub's API lives on its own host; references keep naming "docker.io".
const DOCKER_HUB_DOMAIN = 'docker.io';
const DOCKER_HUB_API_HOST = 'registry-1.docker.io';

/**
 * How much of `refString` (name[:tag][@digest]) the prefix matches, or -1.
 * A plain prefix must end at a component boundary; "*.domain" matches the host of any subdomain.
 */
export function prefixMatchLength(refString: string, prefix: string): number {
  if (prefix.startsWith('*.')) {
    const slash = refString.indexOf('/');
    const host = slash < 0 ? refString : refString.slice(0, slash);
    return host.endsWith(prefix.slice(1)) ? host.length : -1;
  }
  if (refString === prefix) return prefix.length;
  if (!refString.startsWith(prefix)) return -1;
  const next = refString[prefix.length];
  // ':' after a bare host would be a port, not a tag: "example.com" must not match "example.com:5000/x".
  if (next === '/' || next === '@' || (next === ':' && prefix.includes('/'))) return prefix.length;
  return -1;
}

/** The [[registry]] table with the longest matching prefix, if any. */
export function findRegistryEntry(config: RegistriesConfig, refString: string): RegistryEntry | undefined {
  let best: RegistryEntry | undefined;
  for (const entry of config.registries) {
    if (prefixMatchLength(refString, entry.prefix) < 0) continue;
    if (!best || entry.prefix.length > best.prefix.length) best = entry;
  }
  return best;
}

export function apiHost(domain: string): string {
  return domain === DOCKER_HUB_DOMAIN ? DOCKER_HUB_API_HOST : domain;
}

function makeEndpoint(config: RegistriesConfig, refString: string, insecure: boolean, mirror: boolean, entry?: RegistryEntry): Endpoint {
  let ref: ImageReference;
  try {
    ref = parseReference(refString);
  } catch (err) {
    const rule = entry ? ` (registries.conf prefix ${JSON.stringify(entry.prefix)})` : '';
    throw new RegistryError('protocol', `rewriting the image reference gave ${JSON.stringify(refString)}, which is not a valid reference${rule}: ${(err as Error).message}`);
  }
  const host = apiHost(ref.domain);
  // A mirror may also have its own [[registry]] table marking it insecure.
  const ownEntry = findRegistryEntry(config, ref.name);
  const endpoint: Endpoint = {
    host,
    repository: ref.path,
    insecure: insecure || (ownEntry?.insecure ?? false),
    plainHttp: isLoopbackHost(host),
    mirror,
  };
  const manifestRef = ref.digest ?? ref.tag;
  if (manifestRef !== undefined) endpoint.reference = manifestRef;
  return endpoint;
}

function rewrite(refString: string, prefix: string, location: string): string {
  if (location === '') return refString;
  return location + refString.slice(prefixMatchLength(refString, prefix));
}

/**
 * Where to pull `ref` from, in order: the matching [[registry]] table's mirrors that apply to
 * this kind of reference (by tag or by digest), then its location. Throws RegistryError 'blocked'.
 */
export function resolveEndpoints(config: RegistriesConfig, ref: ImageReference): Endpoint[] {
  const refString = formatReference(ref);
  const entry = findRegistryEntry(config, refString);
  if (!entry) return [makeEndpoint(config, refString, false, false)];
  if (entry.blocked) {
    throw new RegistryError('blocked', `pulling ${refString} is blocked by the registries configuration (prefix ${JSON.stringify(entry.prefix)} has blocked = true)`);
  }
  const byDigest = ref.digest !== undefined;
  const endpoints: Endpoint[] = [];
  for (const mirror of entry.mirrors) {
    if (mirror.pullFromMirror === 'digest-only' && !byDigest) continue;
    if (mirror.pullFromMirror === 'tag-only' && byDigest) continue;
    endpoints.push(makeEndpoint(config, rewrite(refString, entry.prefix, mirror.location), mirror.insecure, true, entry));
  }
  endpoints.push(makeEndpoint(config, rewrite(refString, entry.prefix, entry.location), entry.insecure, false, entry));
  return endpoints;
}

export function describeEndpoint(endpoint: Endpoint): string {
  return `${endpoint.mirror ? 'mirror ' : ''}${endpoint.host}/${endpoint.repository}`;
}
