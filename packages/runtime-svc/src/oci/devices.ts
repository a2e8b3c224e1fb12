import { promises as fs } from 'node:fs';
import { join } from 'node:path';
import type { Device } from './runtime-spec.js';

/** A host device node to create in the container, with the cgroup access it gets ("rwm" subset). */
export interface ResolvedDevice {
  device: Device;
  access: string;
}

function major(rdev: bigint): number {
  return Number(((rdev >> 8n) & 0xfffn) | ((rdev >> 32n) & ~0xfffn));
}

function minor(rdev: bigint): number {
  return Number((rdev & 0xffn) | ((rdev >> 12n) & ~0xffn));
}

export class DeviceError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'DeviceError';
  }
}

/** Looks up a host device node (following symlinks) so it can be recreated at `containerPath`. */
export async function resolveHostDevice(hostPath: string, containerPath = hostPath, access = 'rwm'): Promise<ResolvedDevice> {
  if (!/^[rwm]{1,3}$/.test(access)) throw new DeviceError(`device ${hostPath}: permissions "${access}" must be a combination of r, w and m`);
  let st;
  try {
    st = await fs.stat(hostPath, { bigint: true });
  } catch (err) {
    throw new DeviceError(`device ${hostPath} is not available on this host: ${(err as Error).message}`);
  }
  const type = st.isCharacterDevice() ? 'c' : st.isBlockDevice() ? 'b' : undefined;
  if (!type) throw new DeviceError(`${hostPath} is not a character or block device`);
  return {
    device: {
      type,
      path: containerPath,
      major: major(st.rdev),
      minor: minor(st.rdev),
      fileMode: Number(st.mode & 0o777n),
      uid: Number(st.uid),
      gid: Number(st.gid),
    },
    access,
  };
}

const SKIPPED_DIRS = new Set(['/dev/pts', '/dev/shm', '/dev/mqueue', '/dev/fd']);

/** Every device node under /dev, for privileged containers. */
export async function listHostDevices(root = '/dev'): Promise<ResolvedDevice[]> {
  const found: ResolvedDevice[] = [];
  const walk = async (dir: string): Promise<void> => {
    let entries;
    try {
      entries = await fs.readdir(dir, { withFileTypes: true });
    } catch {
      return;
    }
    for (const entry of entries) {
      const path = join(dir, entry.name);
      if (entry.isDirectory()) {
        if (!SKIPPED_DIRS.has(path)) await walk(path);
      } else if (entry.isCharacterDevice() || entry.isBlockDevice()) {
        // /dev/console belongs to the container's own terminal; runc sets it up.
        if (path === '/dev/console') continue;
        found.push(await resolveHostDevice(path, path, 'rwm'));
      }
    }
  };
  await walk(root);
  return found;
}
