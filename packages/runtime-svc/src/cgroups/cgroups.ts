import { setTimeout as sleep } from 'node:timers/promises';
import { promises as fs } from 'node:fs';
import { join } from 'node:path';
import { FULL_ID } from '../state/ids.js';

export type CgroupDriver = 'cgroupfs' | 'systemd';

export const CGROUP_ROOT = '/sys/fs/cgroup';

/** The systemd driver is right only where systemd runs the machine (and so owns the cgroup tree). */
export async function detectCgroupDriver(): Promise<CgroupDriver> {
  const comm = await fs.readFile('/proc/1/comm', 'utf8').catch(() => '');
  return comm.trim() === 'systemd' ? 'systemd' : 'cgroupfs';
}

/**
 * runc's cgroupsPath for a container. cgroupfs: `<parent>/<id>`. systemd: `<slice>:skiff:<id>`,
 * where a parent given as a path is turned into the slice name systemd would use for it.
 */
export function cgroupsPathFor(driver: CgroupDriver, parent: string, id: string): string {
  if (driver === 'cgroupfs') {
    const clean = `/${parent.split('/').filter(Boolean).join('/')}`;
    return clean === '/' ? `/${id}` : `${clean}/${id}`;
  }
  return `${systemdSlice(parent)}:skiff:${id}`;
}

export function systemdSlice(parent: string): string {
  const parts = parent.split('/').filter(Boolean);
  const last = parts[parts.length - 1];
  if (last === undefined) return '-.slice';
  if (last.endsWith('.slice')) return last;
  return `${parts.join('-')}.slice`;
}

/** Where each cgroup controller is mounted; cgroup v2 appears under the key "" (unified). */
export async function cgroupMounts(): Promise<Map<string, string>> {
  const text = await fs.readFile('/proc/self/mountinfo', 'utf8');
  const out = new Map<string, string>();
  for (const line of text.split('\n')) {
    const sep = line.indexOf(' - ');
    if (sep < 0) continue;
    const fields = line.slice(0, sep).split(' ');
    const [fstype, , superOptions] = line.slice(sep + 3).split(' ');
    const point = fields[4];
    if (!point) continue;
    if (fstype === 'cgroup2') {
      if (!out.has('')) out.set('', point);
    } else if (fstype === 'cgroup') {
      for (const option of (superOptions ?? '').split(',')) {
        if (['rw', 'ro', 'relatime', 'noexec', 'nosuid', 'nodev'].includes(option) || option.startsWith('name=')) continue;
        if (!out.has(option)) out.set(option, point);
      }
    }
  }
  return out;
}

/**
 * A process's cgroup per controller, from /proc/<pid>/cgroup ("4:memory:/a/b"; v2 is "0::/a/b",
 * stored under ""). Reading it from the process works whichever driver placed it.
 */
export function parseProcCgroup(text: string): Map<string, string> {
  const out = new Map<string, string>();
  for (const line of text.split('\n')) {
    const first = line.indexOf(':');
    const second = line.indexOf(':', first + 1);
    if (first < 0 || second < 0) continue;
    const controllers = line.slice(first + 1, second);
    const path = line.slice(second + 1);
    if (controllers === '') out.set('', path);
    for (const c of controllers.split(',')) if (c && !c.startsWith('name=')) out.set(c, path);
  }
  return out;
}

/** Removes dir and the directories below it, deepest first; resolves false when one stayed (busy). */
async function removeTree(dir: string): Promise<boolean> {
  let entries;
  try {
    entries = await fs.readdir(dir, { withFileTypes: true });
  } catch {
    return true;
  }
  let removed = true;
  for (const e of entries) if (e.isDirectory()) removed = (await removeTree(join(dir, e.name))) && removed;
  return fs.rmdir(dir).then(
    () => removed,
    (err: NodeJS.ErrnoException) => err.code === 'ENOENT',
  );
}

/** A cgroup stays busy for a moment after its last process was killed (it has not finished exiting). */
const BUSY_RETRY_MS = 2000;

/**
 * Removes one of our cgroupfs-driver cgroups (and empty ones below it) from every mounted
 * hierarchy, retrying for a moment while one is busy; one that stays busy stays. Only paths
 * ending in a sandbox or container id are touched.
 */
export async function removeCgroup(relative: string): Promise<void> {
  const rel = relative.replace(/^\/+/, '');
  if (!FULL_ID.test(rel.split('/').pop() ?? '') || rel.includes(':')) return;
  const hierarchies = await fs.readdir(CGROUP_ROOT).catch(() => [] as string[]);
  const dirs = [join(CGROUP_ROOT, rel), ...hierarchies.map((h) => join(CGROUP_ROOT, h, rel))];
  const deadline = performance.now() + BUSY_RETRY_MS;
  for (;;) {
    let busy = false;
    for (const dir of dirs) if (!(await removeTree(dir))) busy = true;
    if (!busy || performance.now() >= deadline) return;
    await sleep(50);
  }
}
