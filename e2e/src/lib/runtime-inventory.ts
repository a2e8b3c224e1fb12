/**
 * What the runtime service of one Skiff instance has on the machine, read from the machine itself
 * (not from the runtime's answers), so tests can tell whether anything was left behind.
 *
 *   interface RuntimeLocation { dir, root, runDir, cgroupParent, network: PodNetwork }
 *   interface PodNetwork { name, bridge, ipamDir }          from the installed CNI configuration
 *   readPodNetwork(cniConfDir): Promise<PodNetwork>
 *   takeInventory(location): Promise<RuntimeInventory>
 *   interface RuntimeInventory {
 *     mounts            mount points under the instance's directory (the netns directory's own
 *                       bind mount aside)
 *     netns             files in <run_dir>/netns
 *     runc              container ids with state in an OCI runtime's root: runc's (<run_dir>/runc)
 *                       and each further handler's (<run_dir>/runtimes/<name>: runc's directories,
 *                       runsc's `<container id>_sandbox:<sandbox id>.state` files)
 *     monitors          live conmon processes (pid, container id) of this instance
 *     cgroups           cgroup directories under the instance's cgroup parent, in any hierarchy
 *     ipOwners          ids host-local holds an address for (ip -> id), this network
 *     natRuleOwners     ids named in the CNI rules of iptables' nat table, this network
 *     sandboxDirs, containerDirs, cniResults   the runtime's own directories and cache files
 *   }
 *   inventoryIds(inventory): Set<string>   every container / sandbox id the inventory mentions
 *   placesOf(inventory, id): string[]      which parts of the inventory mention id (for messages)
 *   subtractBaseline(inventory, baseline)  drops addresses and rules present at the baseline
 *                                          (host-local's directory may be shared with others)
 *   listConmonProcesses(runDir): Promise<{ pid, id }[]>
 *   mountsUnder(dir): Promise<string[]>     mount points at or below dir, from /proc/self/mountinfo
 */
import { execFile } from 'node:child_process';
import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { promisify } from 'node:util';

const run = promisify(execFile);
const CGROUP_ROOT = '/sys/fs/cgroup';
const HOST_LOCAL_DEFAULT_DIR = '/var/lib/cni/networks';
const FULL_ID = /^[0-9a-f]{64}$/;

export interface PodNetwork {
  name: string;
  bridge: string;
  /** host-local's allocation directory for this network. */
  ipamDir: string;
}

export interface RuntimeLocation {
  dir: string;
  root: string;
  runDir: string;
  cgroupParent: string;
  network: PodNetwork;
}

export interface RuntimeInventory {
  mounts: string[];
  netns: string[];
  runc: string[];
  monitors: { pid: number; id: string }[];
  cgroups: string[];
  ipOwners: Record<string, string>;
  natRuleOwners: string[];
  sandboxDirs: string[];
  containerDirs: string[];
  cniResults: string[];
}

interface ConflistPlugin {
  type?: string;
  bridge?: string;
  ipam?: { type?: string; dataDir?: string };
}

/** The pod network of the first configuration in the directory (the one the runtime uses). */
export async function readPodNetwork(cniConfDir: string): Promise<PodNetwork> {
  const files = (await readdir(cniConfDir)).filter((f) => /\.(conflist|conf|json)$/.test(f)).sort();
  if (files.length === 0) throw new Error(`no CNI configuration in ${cniConfDir}`);
  const config = JSON.parse(await readFile(join(cniConfDir, files[0]!), 'utf8')) as { name: string; plugins?: ConflistPlugin[] } & ConflistPlugin;
  const plugins = config.plugins ?? [config];
  const bridge = plugins.find((p) => p.type === 'bridge');
  const ipam = plugins.find((p) => p.ipam?.type === 'host-local')?.ipam;
  return {
    name: config.name,
    bridge: bridge?.bridge ?? 'cni0',
    ipamDir: join(ipam?.dataDir ?? HOST_LOCAL_DEFAULT_DIR, config.name),
  };
}

async function listDir(dir: string): Promise<string[]> {
  return readdir(dir).catch(() => [] as string[]);
}

/** Mount points (unescaped) under `dir`, from /proc/self/mountinfo. */
export async function mountsUnder(dir: string): Promise<string[]> {
  const text = await readFile('/proc/self/mountinfo', 'utf8');
  const prefix = `${dir}/`;
  const points = text
    .split('\n')
    .map((line) => line.split(' ')[4])
    .filter((p): p is string => p !== undefined)
    .map((p) => p.replace(/\\([0-7]{3})/g, (_, octal: string) => String.fromCharCode(Number.parseInt(octal, 8))))
    .filter((p) => p === dir || p.startsWith(prefix));
  return [...new Set(points)].sort();
}

/** conmon processes whose exit directory is this instance's: the container monitors it started. */
export async function listConmonProcesses(runDir: string): Promise<{ pid: number; id: string }[]> {
  const exitDir = join(runDir, 'exits');
  const out: { pid: number; id: string }[] = [];
  for (const name of await listDir('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    const argv = (await readFile(`/proc/${name}/cmdline`, 'utf8').catch(() => '')).split('\0');
    if (!argv[0]?.endsWith('conmon')) continue;
    const exitAt = argv.indexOf('--exit-dir');
    if (exitAt < 0 || argv[exitAt + 1] !== exitDir) continue;
    out.push({ pid: Number(name), id: argv[argv.indexOf('--cid') + 1] ?? '' });
  }
  return out.sort((a, b) => a.id.localeCompare(b.id));
}

async function cgroupsUnder(parent: string): Promise<string[]> {
  const rel = parent.replace(/^\/+/, '');
  const names = new Set<string>();
  for (const hierarchy of await listDir(CGROUP_ROOT)) {
    for (const name of await listDir(join(CGROUP_ROOT, hierarchy, rel))) {
      if (FULL_ID.test(name)) names.add(name);
    }
  }
  return [...names].sort();
}

async function ipOwners(ipamDir: string): Promise<Record<string, string>> {
  const out: Record<string, string> = {};
  for (const name of await listDir(ipamDir)) {
    if (!/^\d+\.\d+\.\d+\.\d+$/.test(name)) continue;
    const text = await readFile(join(ipamDir, name), 'utf8').catch(() => '');
    out[name] = text.split(/\r?\n/)[0]!.trim();
  }
  return out;
}

/** Ids in the comments the bridge and portmap plugins put on their nat rules ("name: ... id: ..."). */
async function natRuleOwners(network: string): Promise<string[]> {
  let text: string;
  try {
    text = (await run('iptables-save', ['-t', 'nat'], { maxBuffer: 64 * 1024 * 1024 })).stdout;
  } catch {
    return [];
  }
  const ids = new Set<string>();
  const pattern = /name: \\?"([^"\\]+)\\?" id: \\?"([0-9a-f]{64})\\?"/g;
  for (const match of text.matchAll(pattern)) if (match[1] === network) ids.add(match[2]!);
  return [...ids].sort();
}

async function runtimeStateIds(runDir: string): Promise<string[]> {
  const ids = new Set((await listDir(join(runDir, 'runc'))).filter((n) => FULL_ID.test(n)));
  const runtimes = join(runDir, 'runtimes');
  for (const handler of await listDir(runtimes)) {
    for (const name of await listDir(join(runtimes, handler))) {
      const id = FULL_ID.test(name) ? name : /^([0-9a-f]{64})_sandbox:[0-9a-f]{64}\.state$/.exec(name)?.[1];
      if (id !== undefined) ids.add(id);
    }
  }
  return [...ids].sort();
}

export async function takeInventory(location: RuntimeLocation): Promise<RuntimeInventory> {
  const netnsDir = join(location.runDir, 'netns');
  const runtimeDir = join(location.root, 'runtime');
  return {
    mounts: (await mountsUnder(location.dir)).filter((m) => m !== netnsDir),
    netns: (await listDir(netnsDir)).sort(),
    runc: await runtimeStateIds(location.runDir),
    monitors: await listConmonProcesses(location.runDir),
    cgroups: await cgroupsUnder(location.cgroupParent),
    ipOwners: await ipOwners(location.network.ipamDir),
    natRuleOwners: await natRuleOwners(location.network.name),
    sandboxDirs: (await listDir(join(runtimeDir, 'sandboxes'))).sort(),
    containerDirs: (await listDir(join(runtimeDir, 'containers'))).sort(),
    cniResults: (await listDir(join(location.root, 'cni', 'results'))).sort(),
  };
}

/** The inventory without the addresses and rules that were there already at `baseline`. */
export function subtractBaseline(inventory: RuntimeInventory, baseline: RuntimeInventory): RuntimeInventory {
  const ipOwnersNow = Object.fromEntries(Object.entries(inventory.ipOwners).filter(([ip, id]) => baseline.ipOwners[ip] !== id));
  return { ...inventory, ipOwners: ipOwnersNow, natRuleOwners: inventory.natRuleOwners.filter((id) => !baseline.natRuleOwners.includes(id)) };
}

/** Every sandbox or container id the inventory mentions, wherever. */
export function inventoryIds(inventory: RuntimeInventory): Set<string> {
  const ids = new Set<string>([
    ...inventory.netns,
    ...inventory.runc,
    ...inventory.monitors.map((m) => m.id),
    ...inventory.cgroups,
    ...Object.values(inventory.ipOwners),
    ...inventory.natRuleOwners,
    ...inventory.sandboxDirs,
    ...inventory.containerDirs,
  ]);
  for (const mount of inventory.mounts) for (const part of mount.split('/')) if (FULL_ID.test(part)) ids.add(part);
  for (const file of inventory.cniResults) for (const match of file.matchAll(/[0-9a-f]{64}/g)) ids.add(match[0]);
  return ids;
}

/** The names of the inventory's parts that mention `id`, so a failure says what was left behind. */
export function placesOf(inventory: RuntimeInventory, id: string): string[] {
  const places: string[] = [];
  for (const [part, value] of Object.entries(inventory) as [keyof RuntimeInventory, RuntimeInventory[keyof RuntimeInventory]][]) {
    if (JSON.stringify(value).includes(id)) places.push(part);
  }
  return places;
}
