import { readFile } from 'node:fs/promises';
import { parse as parseToml, TomlError } from 'smol-toml';
import { isValidHost, parseLocation } from './location.js';

export type PullFromMirror = 'all' | 'digest-only' | 'tag-only';

export interface RegistryMirror {
  location: string;
  insecure: boolean;
  pullFromMirror: PullFromMirror;
}

export interface RegistryEntry {
  /** host[:port][/path][:tag|@digest], or "*.domain" for any subdomain. */
  prefix: string;
  /** Where the prefix's namespace really lives; "" for a wildcard prefix that is not rewritten. */
  location: string;
  insecure: boolean;
  blocked: boolean;
  mirrors: RegistryMirror[];
}

export interface RegistriesConfig {
  registries: RegistryEntry[];
  unqualifiedSearchRegistries: string[];
}

export class RegistriesConfigError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'RegistriesConfigError';
  }
}

export function emptyRegistriesConfig(): RegistriesConfig {
  return { registries: [], unqualifiedSearchRegistries: [] };
}

type Table = Record<string, unknown>;

// Keys of containers-registries.conf(5) that Skiff reads, and those it accepts but has no use for
// (short-name aliasing and credential helpers belong to interactive clients, not to the kubelet's pulls).
const TOP_LEVEL_KEYS = new Set([
  'unqualified-search-registries',
  'registry',
  'aliases',
  'short-name-mode',
  'credential-helpers',
  'additional-layer-store-auth-helper',
]);
const REGISTRY_KEYS = new Set(['prefix', 'location', 'insecure', 'blocked', 'mirror-by-digest-only', 'mirror']);
const MIRROR_KEYS = new Set(['location', 'insecure', 'pull-from-mirror']);
const SHORT_NAME_MODES = new Set(['', 'enforcing', 'permissive', 'disabled']);
const PULL_FROM_MIRROR_VALUES = new Set(['', 'all', 'digest-only', 'tag-only']);
const WILDCARD_PREFIX = /^\*\.([a-zA-Z0-9-]+(?:\.[a-zA-Z0-9-]+)*)$/;

function isTable(value: unknown): value is Table {
  return typeof value === 'object' && value !== null && !Array.isArray(value) && !(value instanceof Date);
}

class Checker {
  constructor(private readonly source: string) {}

  fail(message: string): never {
    throw new RegistriesConfigError(`${this.source}: ${message}`);
  }

  knownKeys(table: Table, known: Set<string>, where: string): void {
    const unknown = Object.keys(table).filter((k) => !known.has(k));
    if (unknown.length > 0) {
      const names = unknown.map((k) => JSON.stringify(k)).join(', ');
      this.fail(`unknown key${unknown.length > 1 ? 's' : ''} ${names} in ${where} (known: ${[...known].join(', ')})`);
    }
  }

  optionalString(table: Table, key: string, where: string): string | undefined {
    const value = table[key];
    if (value === undefined) return undefined;
    if (typeof value !== 'string') this.fail(`${where}.${key} must be a string, got ${describe(value)}`);
    return value;
  }

  optionalBoolean(table: Table, key: string, where: string): boolean {
    const value = table[key];
    if (value === undefined) return false;
    if (typeof value !== 'boolean') this.fail(`${where}.${key} must be true or false, got ${describe(value)}`);
    return value;
  }

  stringArray(table: Table, key: string, where: string): string[] {
    const value = table[key];
    if (value === undefined) return [];
    if (!Array.isArray(value) || !value.every((v) => typeof v === 'string')) {
      this.fail(`${where}${key} must be an array of strings, got ${describe(value)}`);
    }
    return value as string[];
  }

  location(value: string, where: string): string {
    const trimmed = value.replace(/\/+$/, '');
    try {
      parseLocation(trimmed);
    } catch (err) {
      this.fail(`${where} ${JSON.stringify(value)}: ${(err as Error).message}`);
    }
    return trimmed;
  }
}

function describe(value: unknown): string {
  if (Array.isArray(value)) return 'an array';
  if (isTable(value)) return 'a table';
  return JSON.stringify(value);
}

function v1FormatMessage(v1: unknown): string {
  const lists = isTable(v1) ? v1 : {};
  const registriesOf = (name: string): string[] => {
    const t = lists[name];
    return isTable(t) && Array.isArray(t['registries']) ? t['registries'].filter((r): r is string => typeof r === 'string') : [];
  };
  const lines: string[] = [];
  const search = registriesOf('search');
  if (search.length > 0) lines.push(`unqualified-search-registries = ${JSON.stringify(search)}`);
  for (const r of registriesOf('insecure')) lines.push(`[[registry]] location = ${JSON.stringify(r)}, insecure = true`);
  for (const r of registriesOf('block')) lines.push(`[[registry]] location = ${JSON.stringify(r)}, blocked = true`);
  const hint = lines.length > 0 ? `; the version 2 equivalent is: ${lines.join('; ')}` : '';
  return (
    'uses the deprecated version 1 format ([registries.search], [registries.insecure], [registries.block]), which Skiff does not read; ' +
    `rewrite it in the version 2 format described in containers-registries.conf(5)${hint}`
  );
}

function parseMirror(check: Checker, raw: unknown, where: string, byDigestOnly: boolean): RegistryMirror {
  if (!isTable(raw)) check.fail(`${where} must be a table ([[registry.mirror]])`);
  check.knownKeys(raw, MIRROR_KEYS, where);
  const location = check.optionalString(raw, 'location', where);
  if (location === undefined || location === '') check.fail(`${where} has no location`);
  const pull = check.optionalString(raw, 'pull-from-mirror', where) ?? '';
  if (!PULL_FROM_MIRROR_VALUES.has(pull)) {
    check.fail(`${where}.pull-from-mirror must be "all", "digest-only" or "tag-only", got ${JSON.stringify(pull)}`);
  }
  if (byDigestOnly && pull !== '') {
    check.fail(`${where}.pull-from-mirror cannot be set when its registry has mirror-by-digest-only = true; use one or the other`);
  }
  return {
    location: check.location(location, `${where}.location`),
    insecure: check.optionalBoolean(raw, 'insecure', where),
    pullFromMirror: byDigestOnly ? 'digest-only' : ((pull || 'all') as PullFromMirror),
  };
}

function parseRegistry(check: Checker, raw: unknown, where: string): RegistryEntry {
  if (!isTable(raw)) check.fail(`${where} must be a table ([[registry]])`);
  check.knownKeys(raw, REGISTRY_KEYS, where);
  const rawPrefix = check.optionalString(raw, 'prefix', where) ?? '';
  const rawLocation = check.optionalString(raw, 'location', where) ?? '';
  if (rawPrefix === '' && rawLocation === '') check.fail(`${where} needs a prefix or a location`);

  let prefix: string;
  let location: string;
  if (rawPrefix.includes('*')) {
    const wildcard = WILDCARD_PREFIX.exec(rawPrefix);
    if (!wildcard) check.fail(`${where}.prefix ${JSON.stringify(rawPrefix)}: a wildcard is only allowed as "*.domain" (no port or path)`);
    prefix = rawPrefix;
    location = rawLocation === '' ? '' : check.location(rawLocation, `${where}.location`);
  } else {
    location = check.location(rawLocation || rawPrefix, `${where}.location`);
    prefix = rawPrefix === '' ? location : check.location(rawPrefix, `${where}.prefix`);
  }

  const byDigestOnly = check.optionalBoolean(raw, 'mirror-by-digest-only', where);
  const rawMirrors: unknown = raw['mirror'] ?? [];
  if (!Array.isArray(rawMirrors)) check.fail(`${where}.mirror must be an array of tables ([[registry.mirror]])`);
  const mirrors = rawMirrors.map((m, i) => parseMirror(check, m, `${where}.mirror[${i}]`, byDigestOnly));

  return {
    prefix,
    location,
    insecure: check.optionalBoolean(raw, 'insecure', where),
    blocked: check.optionalBoolean(raw, 'blocked', where),
    mirrors,
  };
}

function checkConflicts(check: Checker, registries: RegistryEntry[]): void {
  const byPrefix = new Map<string, number>();
  const byLocation = new Map<string, RegistryEntry>();
  registries.forEach((entry, i) => {
    const earlier = byPrefix.get(entry.prefix);
    if (earlier !== undefined) check.fail(`registry[${i}] repeats the prefix ${JSON.stringify(entry.prefix)} of registry[${earlier}]; merge the two tables`);
    byPrefix.set(entry.prefix, i);
    if (entry.location === '') return;
    const other = byLocation.get(entry.location);
    if (other && other.insecure !== entry.insecure) {
      check.fail(`location ${JSON.stringify(entry.location)} is defined several times with conflicting "insecure" settings`);
    }
    if (other && other.blocked !== entry.blocked) {
      check.fail(`location ${JSON.stringify(entry.location)} is defined several times with conflicting "blocked" settings`);
    }
    byLocation.set(entry.location, entry);
  });
}

/** Parses a containers-registries.conf(5) version 2 file; `source` names it in error messages. */
export function parseRegistriesConfig(text: string, source = 'registries.conf'): RegistriesConfig {
  const check: Checker = new Checker(source);
  let doc: Table;
  try {
    doc = parseToml(text) as Table;
  } catch (err) {
    if (err instanceof TomlError) check.fail(`invalid TOML at line ${err.line}, column ${err.column}: ${err.message.split('\n')[0]}`);
    throw err;
  }

  if ('registries' in doc) check.fail(v1FormatMessage(doc['registries']));
  check.knownKeys(doc, TOP_LEVEL_KEYS, 'the top level');

  const search = check.stringArray(doc, 'unqualified-search-registries', '');
  const unqualifiedSearchRegistries = search.map((r) => r.replace(/\/+$/, ''));
  for (const r of unqualifiedSearchRegistries) {
    if (!isValidHost(r)) check.fail(`unqualified-search-registries entry ${JSON.stringify(r)} must be host[:port], with no path`);
  }

  const mode = check.optionalString(doc, 'short-name-mode', '');
  if (mode !== undefined && !SHORT_NAME_MODES.has(mode)) {
    check.fail(`short-name-mode must be "enforcing", "permissive" or "disabled", got ${JSON.stringify(mode)}`);
  }
  const aliases = doc['aliases'];
  if (aliases !== undefined && (!isTable(aliases) || !Object.values(aliases).every((v) => typeof v === 'string'))) {
    check.fail('aliases must be a table of "short-name" = "registry/repository" strings');
  }
  check.stringArray(doc, 'credential-helpers', '');
  check.optionalString(doc, 'additional-layer-store-auth-helper', '');

  const rawRegistries: unknown = doc['registry'] ?? [];
  if (!Array.isArray(rawRegistries)) check.fail('registry must be an array of tables ([[registry]])');
  const registries = rawRegistries.map((r, i) => parseRegistry(check, r, `registry[${i}]`));
  checkConflicts(check, registries);
  return { registries, unqualifiedSearchRegistries };
}

/** Reads and parses `path`; a missing file is an empty configuration (every image pulled from its own registry). */
export async function loadRegistriesConfig(path: string): Promise<RegistriesConfig> {
  let text: string;
  try {
    text = await readFile(path, 'utf8');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return emptyRegistriesConfig();
    throw new RegistriesConfigError(`cannot read registries configuration ${path}: ${(err as Error).message}`);
  }
  return parseRegistriesConfig(text, path);
}
