import { parseDigest } from './digest.js';

/**
 * A normalized image reference, following the rules docker uses:
 * `busybox` → `docker.io/library/busybox:latest`.
 */
export interface ImageReference {
  /** Registry host, with port if any: "docker.io", "127.0.0.1:5000". */
  domain: string;
  /** Repository path inside the registry: "library/busybox". */
  path: string;
  /** domain + "/" + path. */
  name: string;
  tag?: string;
  digest?: string;
}

export class InvalidReferenceError extends Error {
  constructor(readonly reference: string, reason: string) {
    super(`invalid image reference ${JSON.stringify(reference)}: ${reason}`);
    this.name = 'InvalidReferenceError';
  }
}

const DEFAULT_DOMAIN = 'docker.io';
const LEGACY_DEFAULT_DOMAIN = 'index.docker.io';
const OFFICIAL_REPO_PREFIX = 'library/';
const MAX_NAME_LENGTH = 255;

const PATH_COMPONENT = /^[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*$/;
const DOMAIN_COMPONENT = /^(?:[a-zA-Z0-9]|[a-zA-Z0-9][a-zA-Z0-9-]*[a-zA-Z0-9])$/;
const IPV6_HOST = /^\[[a-fA-F0-9:.%]+\]$/;
const PORT = /^[0-9]+$/;
const TAG = /^[\w][\w.-]{0,127}$/;

function looksLikeDomain(component: string): boolean {
  return component.includes('.') || component.includes(':') || component === 'localhost' || component !== component.toLowerCase();
}

function validateDomain(input: string, domain: string): void {
  let host = domain;
  let port: string | undefined;
  if (domain.startsWith('[')) {
    const end = domain.indexOf(']');
    host = domain.slice(0, end + 1);
    const rest = domain.slice(end + 1);
    if (rest) {
      if (!rest.startsWith(':')) throw new InvalidReferenceError(input, `malformed registry host ${JSON.stringify(domain)}`);
      port = rest.slice(1);
    }
    if (!IPV6_HOST.test(host)) throw new InvalidReferenceError(input, `malformed registry host ${JSON.stringify(domain)}`);
  } else {
    const colon = domain.lastIndexOf(':');
    if (colon >= 0) {
      host = domain.slice(0, colon);
      port = domain.slice(colon + 1);
    }
    if (!host.split('.').every((c) => DOMAIN_COMPONENT.test(c))) {
      throw new InvalidReferenceError(input, `malformed registry host ${JSON.stringify(domain)}`);
    }
  }
  if (port !== undefined && !PORT.test(port)) {
    throw new InvalidReferenceError(input, `malformed registry port in ${JSON.stringify(domain)}`);
  }
}

/** Parses a reference without adding a default tag. Throws InvalidReferenceError. */
export function parseReference(input: string): ImageReference {
  if (typeof input !== 'string' || input.length === 0) throw new InvalidReferenceError(String(input), 'empty reference');
  if (/\s/.test(input)) throw new InvalidReferenceError(input, 'contains white space');

  let rest = input;
  let digest: string | undefined;
  const at = rest.indexOf('@');
  if (at >= 0) {
    digest = rest.slice(at + 1);
    rest = rest.slice(0, at);
    if (!parseDigest(digest)) throw new InvalidReferenceError(input, `malformed digest ${JSON.stringify(digest)} (want sha256:<64 hex digits>)`);
  }

  let tag: string | undefined;
  const lastSlash = rest.lastIndexOf('/');
  const lastColon = rest.lastIndexOf(':');
  if (lastColon > lastSlash) {
    tag = rest.slice(lastColon + 1);
    rest = rest.slice(0, lastColon);
    if (!TAG.test(tag)) throw new InvalidReferenceError(input, `malformed tag ${JSON.stringify(tag)}`);
  }
  if (rest.length === 0) throw new InvalidReferenceError(input, 'missing repository name');

  const components = rest.split('/');
  let domain = DEFAULT_DOMAIN;
  if (components.length > 1 && looksLikeDomain(components[0]!)) {
    domain = components.shift()!;
    validateDomain(input, domain);
    if (domain === LEGACY_DEFAULT_DOMAIN) domain = DEFAULT_DOMAIN;
  }
  if (domain === DEFAULT_DOMAIN && components.length === 1) components.unshift('library');

  for (const c of components) {
    if (c !== c.toLowerCase()) throw new InvalidReferenceError(input, 'repository name must be lowercase');
    if (!PATH_COMPONENT.test(c)) throw new InvalidReferenceError(input, `malformed repository component ${JSON.stringify(c)}`);
  }
  const path = components.join('/');
  const name = `${domain}/${path}`;
  if (name.length > MAX_NAME_LENGTH) throw new InvalidReferenceError(input, `repository name longer than ${MAX_NAME_LENGTH} characters`);

  const ref: ImageReference = { domain, path, name };
  if (tag !== undefined) ref.tag = tag;
  if (digest !== undefined) ref.digest = digest;
  return ref;
}

/** Parses and, when neither tag nor digest is given, adds the tag "latest" (as a pull does). */
export function normalizeReference(input: string): ImageReference {
  const ref = parseReference(input);
  if (ref.tag === undefined && ref.digest === undefined) ref.tag = 'latest';
  return ref;
}

export function formatReference(ref: ImageReference): string {
  let out = ref.name;
  if (ref.tag !== undefined) out += `:${ref.tag}`;
  if (ref.digest !== undefined) out += `@${ref.digest}`;
  return out;
}

/** "docker.io/library/busybox:latest", or undefined when the reference has no tag. */
export function tagReference(ref: ImageReference): string | undefined {
  return ref.tag === undefined ? undefined : `${ref.name}:${ref.tag}`;
}

export function digestReference(ref: ImageReference, digest: string): string {
  return `${ref.name}@${digest}`;
}

/** The short form docker prints: "busybox" for docker.io/library/busybox. */
export function familiarName(ref: ImageReference): string {
  if (ref.domain !== DEFAULT_DOMAIN) return ref.name;
  return ref.path.startsWith(OFFICIAL_REPO_PREFIX) ? ref.path.slice(OFFICIAL_REPO_PREFIX.length) : ref.path;
}
