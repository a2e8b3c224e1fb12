import { promises as fs } from 'node:fs';
import { join } from 'node:path';
import { runCommand } from '@skiff/common';
import type { Mount } from '../oci/runtime-spec.js';
import { MountError } from './mounts.js';
import { MOUNT_API_HELPER } from './recursive-readonly.js';

/**
 * Id-mapped mounts for a pod with its own user namespace: files keep the ownership the container
 * should see without anything being chowned. runc 1.1.5 cannot make them, so runtime-svc does,
 * with the kernel's mount API (helpers/mount-api.py), under the container's directory, before
 * runc runs; runc then binds them like any other path. Everything here is unmounted with the
 * container's directory (removal, a failed create, recovery).
 */
export class IdmappedMounts {
  private count = 0;

  constructor(
    private readonly usernsPath: string,
    private readonly dir: string,
  ) {}

  /** Id-mapped copies of `sources`, made in one go; answers their paths, in order. */
  async map(sources: readonly string[]): Promise<string[]> {
    if (sources.length === 0) return [];
    await fs.mkdir(this.dir, { recursive: true, mode: 0o700 });
    const targets: string[] = [];
    for (const source of sources) {
      const target = join(this.dir, String(this.count++));
      if ((await fs.stat(source)).isDirectory()) await fs.mkdir(target);
      else await fs.writeFile(target, '', { flag: 'wx', mode: 0o600 });
      targets.push(target);
    }
    const args = [MOUNT_API_HELPER, 'idmap', this.usernsPath, ...sources.flatMap((source, i) => [source, targets[i]!])];
    const result = await runCommand('/usr/bin/python3', args, { timeoutMs: 30_000 });
    if (result.code !== 0) throw new MountError(`id-mapped mounts for the pod's user namespace failed: ${result.stderr.trim() || `exit ${result.code}`}`);
    return targets;
  }

  /**
   * The spec's bind mounts with id-mapped sources; `skip` (already made of id-mapped layers) stays
   * as it is.
   */
  async mapBinds(mounts: readonly Mount[], skip: (source: string) => boolean): Promise<Mount[]> {
    const binds = mounts.filter((m): m is Mount & { source: string } => m.type === 'bind' && m.source !== undefined && !skip(m.source));
    const mapped = await this.map(binds.map((m) => m.source));
    const replaced = new Map<Mount, string>(binds.map((m, i) => [m, mapped[i]!]));
    return mounts.map((m) => {
      const source = replaced.get(m);
      return source === undefined ? m : { ...m, source };
    });
  }
}
