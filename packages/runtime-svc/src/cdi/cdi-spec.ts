
/** A CDI spec file was unusable, or a requested device could not be applied. */
export class CdiError extends Error {}

export interface CdiDeviceNode {
  path: string;
  hostPath?: string;
  type?: 'c' | 'b' | 'u' | 'p';
  major?: number;
  minor?: number;
  fileMode?: number;
  permissions?: string;
  uid?: number;
  gid?: number;
}

export interface CdiMount {
  hostPath: string;
  containerPath: string;
  type?: string;
  options?: string[];
}

export interface CdiHook {
  hookName: 'prestart' | 'createRuntime' | 'createContainer' | 'startContainer' | 'poststart' | 'poststop';
  path: string;
  args?: string[];
  env?: string[];
  timeout?: number;
}

export interface CdiContainerEdits {
  env?: string[];
  deviceNodes?: CdiDeviceNode[];
  mounts?: CdiMount[];
  hooks?: CdiHook[];
  additionalGids?: number[];
}

export interface CdiSpec {
  cdiVersion: string;
  /** vendor.com/class */
  kind: string;
  devices: { name: string; containerEdits: CdiContainerEdits }[];
  containerEdits: CdiContainerEdits;
}

/** The spec versions in use today; each later one only adds fields. */
const VERSIONS = /^(0\.[3-8]\.0|1\.[01]\.\d+)$/;
const VENDOR = /^[a-zA-Z0-9]([a-zA-Z0-9_.-]*[a-zA-Z0-9])?$/;
const CLASS = /^[a-zA-Z0-9]([a-zA-Z0-9_.-]*[a-zA-Z0-9])?$/;
const DEVICE_NAME = /^[a-zA-Z0-9]([a-zA-Z0-9_.:-]*[a-zA-Z0-9])?$/;
const HOOK_NAMES = new Set(['prestart', 'createRuntime', 'createContainer', 'startContainer', 'poststart', 'poststop']);

/** A fully qualified device name, `vendor.com/class=name`, split; undefined when it is not one. */
export function parseQualifiedName(text: string): { kind: string; name: string } | undefined {
  const eq = text.indexOf('=');
  const slash = text.indexOf('/');
  if (eq < 0 || slash < 0 || slash > eq) return undefined;
  const vendor = text.slice(0, slash);
  const cls = text.slice(slash + 1, eq);
  const name = text.slice(eq + 1);
  if (!VENDOR.test(vendor) || !CLASS.test(cls) || !DEVICE_NAME.test(name)) return undefined;
  return { kind: `${vendor}/${cls}`, name };
}

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

function strings(v: unknown, what: string): string[] | undefined {
  if (v === undefined || v === null) return undefined;
  if (!Array.isArray(v) || !v.every((s) => typeof s === 'string')) throw new CdiError(`${what} must be a list of strings`);
  return v as string[];
}

function optionalInt(v: unknown, what: string): number | undefined {
  if (v === undefined || v === null) return undefined;
  if (typeof v !== 'number' || !Number.isInteger(v) || v < 0) throw new CdiError(`${what} must be a non-negative integer`);
  return v;
}

function absolute(v: unknown, what: string): string {
  if (typeof v !== 'string' || !v.startsWith('/')) throw new CdiError(`${what} must be an absolute path`);
  return v;
}

function deviceNode(v: unknown, what: string): CdiDeviceNode {
  if (!isObject(v)) throw new CdiError(`${what} must be an object`);
  const type = v['type'];
  if (type !== undefined && type !== null && type !== 'c' && type !== 'b' && type !== 'u' && type !== 'p') throw new CdiError(`${what}.type must be c, b, u or p`);
  const permissions = v['permissions'];
  if (permissions !== undefined && permissions !== null && (typeof permissions !== 'string' || !/^[rwm]{1,3}$/.test(permissions))) {
    throw new CdiError(`${what}.permissions must be a combination of r, w and m`);
  }
  const node: CdiDeviceNode = { path: absolute(v['path'], `${what}.path`) };
  if (v['hostPath'] !== undefined && v['hostPath'] !== null) node.hostPath = absolute(v['hostPath'], `${what}.hostPath`);
  if (typeof type === 'string') node.type = type;
  if (typeof permissions === 'string') node.permissions = permissions;
  for (const key of ['major', 'minor', 'fileMode', 'uid', 'gid'] as const) {
    const n = optionalInt(v[key], `${what}.${key}`);
    if (n !== undefined) node[key] = n;
  }
  return node;
}

function mount(v: unknown, what: string): CdiMount {
  if (!isObject(v)) throw new CdiError(`${what} must be an object`);
  const m: CdiMount = { hostPath: absolute(v['hostPath'], `${what}.hostPath`), containerPath: absolute(v['containerPath'], `${what}.containerPath`) };
  if (typeof v['type'] === 'string') m.type = v['type'];
  const options = strings(v['options'], `${what}.options`);
  if (options) m.options = options;
  return m;
}

function hook(v: unknown, what: string): CdiHook {
  if (!isObject(v)) throw new CdiError(`${what} must be an object`);
  const name = v['hookName'];
  if (typeof name !== 'string' || !HOOK_NAMES.has(name)) throw new CdiError(`${what}.hookName must be one of ${[...HOOK_NAMES].join(', ')}`);
  const h: CdiHook = { hookName: name as CdiHook['hookName'], path: absolute(v['path'], `${what}.path`) };
  const args = strings(v['args'], `${what}.args`);
  const env = strings(v['env'], `${what}.env`);
  const timeout = optionalInt(v['timeout'], `${what}.timeout`);
  if (args) h.args = args;
  if (env) h.env = env;
  if (timeout !== undefined) h.timeout = timeout;
  return h;
}

function list<T>(v: unknown, what: string, item: (v: unknown, what: string) => T): T[] | undefined {
  if (v === undefined || v === null) return undefined;
  if (!Array.isArray(v)) throw new CdiError(`${what} must be a list`);
  return v.map((x, i) => item(x, `${what}[${i}]`));
}

function containerEdits(v: unknown, what: string): CdiContainerEdits {
  if (v === undefined || v === null) return {};
  if (!isObject(v)) throw new CdiError(`${what} must be an object`);
  const edits: CdiContainerEdits = {};
  const env = strings(v['env'], `${what}.env`);
  if (env) {
    for (const e of env) if (!/^[^=]+=/.test(e)) throw new CdiError(`${what}.env entry ${JSON.stringify(e)} must be NAME=value`);
    edits.env = env;
  }
  const nodes = list(v['deviceNodes'], `${what}.deviceNodes`, deviceNode);
  const mounts = list(v['mounts'], `${what}.mounts`, mount);
  const hooks = list(v['hooks'], `${what}.hooks`, hook);
  const gids = list(v['additionalGids'], `${what}.additionalGids`, (x, w) => optionalInt(x, w)!);
  if (nodes) edits.deviceNodes = nodes;
  if (mounts) edits.mounts = mounts;
  if (hooks) edits.hooks = hooks;
  if (gids) edits.additionalGids = gids;
  return edits;
}

/**
 * Parses and checks one spec file's text (JSON, or YAML when `yaml`). The YAML parser is loaded on
 * the first YAML spec: most machines have none, and it would stay in every runtime-svc's heap.
 */
export async function parseCdiSpec(text: string, yaml: boolean): Promise<CdiSpec> {
  let doc: unknown;
  try {
    doc = yaml ? (await import('yaml')).parse(text) : JSON.parse(text);
  } catch (err) {
    throw new CdiError(`not valid ${yaml ? 'YAML' : 'JSON'}: ${(err as Error).message}`);
  }
  if (!isObject(doc)) throw new CdiError('the spec must be an object');
  const version = doc['cdiVersion'];
  if (typeof version !== 'string' || !VERSIONS.test(version)) throw new CdiError(`cdiVersion ${JSON.stringify(version)} is not a CDI version this runtime reads (0.3.0 to 1.1.x)`);
  const kind = doc['kind'];
  if (typeof kind !== 'string' || parseQualifiedName(`${kind}=x`) === undefined) throw new CdiError(`kind ${JSON.stringify(kind)} must be vendor.com/class`);
  const devices = list(doc['devices'], 'devices', (v, what) => {
    if (!isObject(v)) throw new CdiError(`${what} must be an object`);
    const name = v['name'];
    if (typeof name !== 'string' || !DEVICE_NAME.test(name)) throw new CdiError(`${what}.name ${JSON.stringify(name)} is not a valid device name`);
    return { name, containerEdits: containerEdits(v['containerEdits'], `${what}.containerEdits`) };
  });
  if (!devices || devices.length === 0) throw new CdiError('the spec defines no devices');
  const names = new Set<string>();
  for (const d of devices) {
    if (names.has(d.name)) throw new CdiError(`device ${d.name} is defined twice`);
    names.add(d.name);
  }
  return { cdiVersion: version, kind, devices, containerEdits: containerEdits(doc['containerEdits'], 'containerEdits') };
}
