import { promises as fs } from 'node:fs';
import { join } from 'node:path';
import type { CniNetworkConfig, CniPluginConfig } from '@skiff/common';

export type { CniNetworkConfig, CniPluginConfig };

export class CniConfigError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'CniConfigError';
  }
}

const EXTENSIONS = ['.conflist', '.conf', '.json'];

/** Validates and normalises parsed JSON; `source` names it in error messages. */
export function parseNetworkConfig(value: unknown, source: string): CniNetworkConfig {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) throw new CniConfigError(`${source}: not a JSON object`);
  const obj = value as Record<string, unknown>;
  const name = obj['name'];
  const cniVersion = obj['cniVersion'];
  if (typeof name !== 'string' || !name) throw new CniConfigError(`${source}: "name" is missing`);
  if (typeof cniVersion !== 'string' || !cniVersion) throw new CniConfigError(`${source}: "cniVersion" is missing`);
  let plugins: unknown[];
  if (Array.isArray(obj['plugins'])) {
    plugins = obj['plugins'];
  } else if (typeof obj['type'] === 'string') {
    // A single-plugin .conf: the whole object is the plugin's configuration.
    const { name: _n, cniVersion: _v, ...plugin } = obj;
    plugins = [plugin];
  } else {
    throw new CniConfigError(`${source}: has neither "plugins" nor "type"`);
  }
  if (plugins.length === 0) throw new CniConfigError(`${source}: "plugins" is empty`);
  for (const [i, p] of plugins.entries()) {
    if (typeof p !== 'object' || p === null || typeof (p as { type?: unknown }).type !== 'string') {
      throw new CniConfigError(`${source}: plugin ${i} has no "type"`);
    }
    if ((p as { type: string }).type.includes('/')) throw new CniConfigError(`${source}: plugin type "${(p as { type: string }).type}" must be a bare name`);
  }
  const out: CniNetworkConfig = { cniVersion, name, plugins: plugins as CniPluginConfig[] };
  if (obj['disableCheck'] === true) out.disableCheck = true;
  return out;
}

export async function loadNetworkConfigFile(file: string): Promise<CniNetworkConfig> {
  let text: string;
  try {
    text = await fs.readFile(file, 'utf8');
  } catch (err) {
    throw new CniConfigError(`cannot read CNI configuration ${file}: ${(err as Error).message}`);
  }
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch (err) {
    throw new CniConfigError(`${file}: invalid JSON: ${(err as Error).message}`);
  }
  return parseNetworkConfig(parsed, file);
}

/**
 * The network pods join: the first configuration file in `confDir` by name (.conflist, .conf
 * or .json), as the kubelet's CNI convention has it. Undefined when the directory has none.
 */
export async function loadDefaultNetwork(confDir: string): Promise<{ file: string; network: CniNetworkConfig } | undefined> {
  let names: string[];
  try {
    names = await fs.readdir(confDir);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw err;
  }
  const candidates = names.filter((n) => EXTENSIONS.some((e) => n.endsWith(e))).sort();
  const first = candidates[0];
  if (first === undefined) return undefined;
  const file = join(confDir, first);
  return { file, network: await loadNetworkConfigFile(file) };
}
