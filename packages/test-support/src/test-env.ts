import { promises as fs } from 'node:fs';
import { join } from 'node:path';

/** A name no other test run on this machine uses at the same time. */
export function uniqueName(prefix: string): string {
  return `${prefix}${process.pid.toString(36)}${Math.random().toString(36).slice(2, 6)}`;
}

/** A container id conmon accepts (longer than 12 characters) and unique to this run. */
export function uniqueContainerId(prefix: string): string {
  return `${uniqueName(prefix)}${'0'.repeat(16)}`.slice(0, 32);
}

async function removeCgroupDir(dir: string): Promise<void> {
  let entries;
  try {
    entries = await fs.readdir(dir, { withFileTypes: true });
  } catch {
    return;
  }
  for (const e of entries) if (e.isDirectory()) await removeCgroupDir(join(dir, e.name));
  await fs.rmdir(dir).catch(() => undefined);
}

/** Removes a cgroup (and the empty ones below it) from every hierarchy mounted under /sys/fs/cgroup. */
export async function removeCgroupEverywhere(relative: string): Promise<void> {
  const root = '/sys/fs/cgroup';
  const rel = relative.replace(/^\/+/, '');
  if (!rel) throw new Error('refusing to remove the root cgroup');
  const hierarchies = await fs.readdir(root).catch(() => [] as string[]);
  await removeCgroupDir(join(root, rel)); // cgroup v2 mounted directly on /sys/fs/cgroup
  for (const h of hierarchies) await removeCgroupDir(join(root, h, rel));
}

export async function cgroupExistsAnywhere(relative: string): Promise<boolean> {
  const root = '/sys/fs/cgroup';
  const rel = relative.replace(/^\/+/, '');
  for (const h of ['', ...(await fs.readdir(root).catch(() => [] as string[]))]) {
    try {
      await fs.access(join(root, h, rel));
      return true;
    } catch {
      // not in this hierarchy
    }
  }
  return false;
}

export const isRoot = process.getuid?.() === 0;
