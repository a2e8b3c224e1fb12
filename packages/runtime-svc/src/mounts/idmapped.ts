import { promises as fs } from 'node:fs';
import { join } from 'node:path';
import type { Mount } from '../oci/runtime-spec.js';
import { runNativeHelper } from './native-helpers.js';

/**
 * Id-mapped mounts for a pod with its own user namespace: files keep the ownership the container
 * should see without anything being chowned. runc 1.1.5 cannot make them, so runtime-svc does,
 * with the kernel's mount API (helpers/mount-api.c), under the container's directory, before
 * runc runs; runc then binds them like any other path. Every copy a container needs (image
 * layers, image volumes' layers, bind mounts) is planned first and then made in one helper run,
 * all or nothing. Everything here is unmounted with the container's directory (removal, a failed
 * create, recovery).
 */
export class IdmappedMounts {
  /** Source → where its id-mapped copy goes, in the order planned. */
  private readonly planned = new Map<string, string>();

  constructor(
    private readonly usernsPath: string,
    private readonly dir: string,
  ) {}

  /** Plans an id-mapped copy of `source` (one per source); answers where make() will put it. */
  plan(source: string): string {
    let target = this.planned.get(source);
    if (target === undefined) {
      target = join(this.dir, String(this.planned.size));
      this.planned.set(source, target);
    }
    return target;
  }

  /** The id-mapped copy of a planned `source`; one that was not planned is a bug, not a path to use unmapped. */
  copyOf(source: string): string {
    const target = this.planned.get(source);
    if (target === undefined) throw new Error(`no id-mapped copy of ${source} was planned`);
    return target;
  }

  /** Makes every planned copy, in one run of the helper. */
  async make(): Promise<void> {
    if (this.planned.size === 0) return;
    await fs.mkdir(this.dir, { recursive: true, mode: 0o700 });
    await Promise.all(
      [...this.planned].map(async ([source, target]) => {
        if ((await fs.stat(source)).isDirectory()) await fs.mkdir(target);
        else await fs.writeFile(target, '', { flag: 'wx', mode: 0o600 });
      }),
    );
    const pairs = [...this.planned].flat();
    await runNativeHelper('mount-api', ['idmap', this.usernsPath, ...pairs], "id-mapped mounts for the pod's user namespace");
  }

  /** The spec's mounts with each bind's source replaced by its copy; `skip` (already made of id-mapped layers) stays as it is. */
  withMappedSources(mounts: readonly Mount[], skip: (source: string) => boolean): Mount[] {
    return mounts.map((m) => (m.type !== 'bind' || m.source === undefined || skip(m.source) ? m : { ...m, source: this.copyOf(m.source) }));
  }
}

/** The sources of the bind mounts a spec input lists (its bind mounts and the verbatim ones of type bind). */
export function bindSources(input: { mounts?: readonly { hostPath: string }[]; extraMounts?: readonly Mount[] }): string[] {
  return [
    ...(input.mounts ?? []).map((m) => m.hostPath),
    ...(input.extraMounts ?? []).flatMap((m) => (m.type === 'bind' && m.source !== undefined ? [m.source] : [])),
  ];
}
