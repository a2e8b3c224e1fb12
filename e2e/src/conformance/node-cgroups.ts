/**
 * Cgroups for a node that lives beside the host's other processes: one cgroup per hierarchy below
 * the caller's own, which becomes the root of the node's cgroup namespace, and the cgroups inside
 * it that the kubelet's system containers need.
 *
 *   interface CgroupMount { mountPoint, fsType ('cgroup' | 'cgroup2'), options }   options: the
 *                                            controllers (or name=...) a v1 hierarchy carries
 *   cgroupMounts(mountinfo?): CgroupMount[]  the cgroup file systems under /sys/fs/cgroup
 *   ownCgroups(): Map<string, string>        mount point → this process's cgroup in that hierarchy
 *   createCgroup(relativePath, parents?): Promise<void>    in every hierarchy, below parents' entry
 *                                            (default: the root of each); cpuset's cpus and mems
 *                                            copied from the parent
 *   moveProcess(pid, relativePath, parents?): Promise<void>   into that cgroup of every hierarchy
 *   processesIn(relativePath, parents?): Promise<number>   processes in that cgroup and below it (pids)
 *   removeCgroupTree(relativePath, parents?): Promise<string[]>   deepest first; what stayed
 */
import { existsSync, readFileSync } from 'node:fs';
import { mkdir, readdir, readFile, rmdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';

export interface CgroupMount {
  mountPoint: string;
  fsType: 'cgroup' | 'cgroup2';
  /** The controllers and name= of a v1 hierarchy, e.g. "cpu" or "name=systemd"; "" for cgroup2. */
  options: string;
}

const CGROUP_ROOT = '/sys/fs/cgroup';
const V1_OPTIONS = new Set(['rw', 'ro', 'relatime', 'noatime', 'nosuid', 'nodev', 'noexec', 'clone_children', 'nsdelegate', 'memory_recursiveprot']);

/** Parses /proc/self/mountinfo: "<id> <parent> <dev> <root> <mount point> <opts> [optional...] - <fs> <source> <super opts>". */
export function cgroupMounts(mountinfo = readFileSync('/proc/self/mountinfo', 'utf8')): CgroupMount[] {
  const mounts: CgroupMount[] = [];
  for (const line of mountinfo.split('\n')) {
    const [before, after] = line.split(' - ');
    if (before === undefined || after === undefined) continue;
    const mountPoint = before.split(' ')[4] ?? '';
    const [fsType, , superOptions = ''] = after.split(' ');
    if ((fsType !== 'cgroup' && fsType !== 'cgroup2') || !mountPoint.startsWith(`${CGROUP_ROOT}/`)) continue;
    const options = fsType === 'cgroup' ? superOptions.split(',').filter((o) => !V1_OPTIONS.has(o)).join(',') : '';
    mounts.push({ mountPoint, fsType, options });
  }
  return mounts;
}

/** /proc/self/cgroup lines are "<id>:<controllers>:<path>"; cgroup2 has id 0 and no controllers. */
export function ownCgroups(mounts = cgroupMounts()): Map<string, string> {
  const own = new Map<string, string>();
  const lines = readFileSync('/proc/self/cgroup', 'utf8').split('\n').filter(Boolean);
  for (const mount of mounts) {
    for (const line of lines) {
      const match = /^\d+:([^:]*):(.*)$/.exec(line);
      if (!match) continue;
      const [, controllers = '', path = '/'] = match;
      const sameSet = (a: string, b: string): boolean => a.split(',').sort().join(',') === b.split(',').sort().join(',');
      if (mount.fsType === 'cgroup2' ? controllers === '' : sameSet(controllers, mount.options)) own.set(mount.mountPoint, path);
    }
  }
  return own;
}

function dirOf(mount: CgroupMount, relativePath: string, parents?: Map<string, string>): string {
  return join(mount.mountPoint, parents?.get(mount.mountPoint) ?? '/', relativePath);
}

export async function createCgroup(relativePath: string, parents?: Map<string, string>): Promise<void> {
  for (const mount of cgroupMounts()) {
    const dir = dirOf(mount, relativePath, parents);
    await mkdir(dir, { recursive: true });
    if (mount.options.split(',').includes('cpuset')) {
      // A v1 cpuset cgroup takes no process until its cpus and mems are set.
      for (const file of ['cpuset.cpus', 'cpuset.mems']) {
        if ((await readFile(join(dir, file), 'utf8')).trim() !== '') continue;
        await writeFile(join(dir, file), await readFile(join(dir, '..', file), 'utf8'));
      }
    }
  }
}

export async function moveProcess(pid: number, relativePath: string, parents?: Map<string, string>): Promise<void> {
  for (const mount of cgroupMounts()) await writeFile(join(dirOf(mount, relativePath, parents), 'cgroup.procs'), `${pid}\n`);
}

async function countProcesses(dir: string): Promise<number> {
  const own = await readFile(join(dir, 'cgroup.procs'), 'utf8').catch(() => '');
  let count = own.split('\n').filter(Boolean).length;
  for (const entry of await readdir(dir, { withFileTypes: true }).catch(() => [])) {
    if (entry.isDirectory()) count += await countProcesses(join(dir, entry.name));
  }
  return count;
}

export async function processesIn(relativePath: string, parents?: Map<string, string>): Promise<number> {
  const pids = cgroupMounts().find((mount) => mount.options.split(',').includes('pids'));
  return pids === undefined ? 0 : countProcesses(dirOf(pids, relativePath, parents));
}

async function removeTree(dir: string, left: string[]): Promise<void> {
  const entries = await readdir(dir, { withFileTypes: true }).catch(() => []);
  for (const entry of entries) if (entry.isDirectory()) await removeTree(join(dir, entry.name), left);
  await rmdir(dir).catch(() => {
    if (existsSync(dir)) left.push(dir);
  });
}

export async function removeCgroupTree(relativePath: string, parents?: Map<string, string>): Promise<string[]> {
  const left: string[] = [];
  for (const mount of cgroupMounts()) await removeTree(dirOf(mount, relativePath, parents), left);
  return left;
}
