import { promises as fs } from 'node:fs';
import { join } from 'node:path';
import { errorMessage, runCommand, unmountFilesystem } from '@skiff/common';
import { runNativeHelper } from '../mounts/native-helpers.js';
import type { IdMapping } from '../oci/runtime-spec.js';
import { mountPoints, mountTable } from '../mounts/mountinfo.js';

/**
 * Named network namespaces that outlive every process in them: each is an nsfs bind mount on
 * a file in our own run directory (like `ip netns add` does under /run/netns).
 *
 * `ip netns` cannot be pointed at another directory (iproute2 compiles the path in), so a helper
 * of ours (helpers/pod-netns.c) creates the namespace and bind-mounts it onto the file, as
 * `unshare --net=<file> true` would; `umount` + unlink removes it. Like iproute2, we first make
 * the directory a shared mount of its own, so that when a namespace is unmounted the unmount
 * also reaches copies of the mount in other mount namespaces (for example a container that
 * bind-mounted /run), which would otherwise keep the namespace alive.
 */
export const DEFAULT_NETNS_DIR = '/run/skiff/netns';

const NAME = /^[A-Za-z0-9][A-Za-z0-9_.-]{0,254}$/;

export class NetnsError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'NetnsError';
  }
}

export interface NetnsEntry {
  name: string;
  path: string;
  /** False for a file left behind with no namespace mounted on it (after a reboot, a crash). */
  mounted: boolean;
}

function checkName(name: string): void {
  if (!NAME.test(name)) throw new NetnsError(`invalid network namespace name "${name}": letters, digits, '.', '_' and '-' only`);
}

async function run(file: string, args: string[]): Promise<void> {
  const result = await runCommand(file, args, { timeoutMs: 30_000 });
  if (result.code !== 0) throw new NetnsError(`${file} ${args.join(' ')} failed: ${result.stderr.trim() || `exit ${result.code}`}`);
}

export class NetnsManager {
  private prepared: Promise<void> | undefined;

  constructor(readonly dir: string = DEFAULT_NETNS_DIR) {}

  pathOf(name: string): string {
    checkName(name);
    return join(this.dir, name);
  }

  /** Makes the directory a shared mount point of its own, once. */
  private prepareDir(): Promise<void> {
    this.prepared ??= (async () => {
      await fs.mkdir(this.dir, { recursive: true, mode: 0o755 });
      const optional = (await mountTable()).get(this.dir);
      if (!optional) await run('mount', ['--bind', this.dir, this.dir]);
      if (!optional?.some((f) => f.startsWith('shared:'))) await run('mount', ['--make-shared', this.dir]);
    })().catch((err: unknown) => {
      this.prepared = undefined;
      throw err;
    });
    return this.prepared;
  }

  /** Undoes the directory's own mount (for tests and uninstall); namespaces in it must be removed first. */
  async releaseDir(): Promise<void> {
    if ((await mountPoints()).has(this.dir)) await run('umount', [this.dir]);
    this.prepared = undefined;
  }

  /**
   * Creates the namespace, with `lo` up, and returns its path (what CNI_NETNS and runc's
   * namespace path take). helpers/pod-netns.c does it in one process: no loopback plugin needed.
   */
  async create(name: string): Promise<string> {
    return this.bindAt(name, (path) => runNativeHelper('pod-netns', [path], 'the pod network namespace'));
  }

  /**
   * Creates the namespace, with `lo` up, owned by a new user namespace (mapped as `mappings`
   * says, container id 0 first), which is bind-mounted onto `usernsFile` (made here): for a pod
   * with its own user namespace, whose containers could not join a network namespace the host's
   * owns (nor mount sysfs in it). helpers/pod-userns.c makes both in one go and leaves no process behind; undo
   * with remove() and unmounting `usernsFile`.
   */
  async createInUserNamespace(name: string, usernsFile: string, mappings: { uid: IdMapping; gid: IdMapping }): Promise<string> {
    return this.bindAt(name, async (path) => {
      await fs.writeFile(usernsFile, '', { flag: 'wx', mode: 0o444 });
      const args = [usernsFile, path, String(mappings.uid.hostID), String(mappings.gid.hostID), String(mappings.uid.size)];
      await runNativeHelper('pod-userns', args, "the pod's user and network namespaces");
    });
  }

  private async bindAt(name: string, bind: (path: string) => Promise<void>): Promise<string> {
    const path = this.pathOf(name);
    await this.prepareDir();
    try {
      await fs.writeFile(path, '', { flag: 'wx', mode: 0o444 });
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'EEXIST') throw new NetnsError(`network namespace ${path} already exists`);
      throw err;
    }
    try {
      await bind(path);
    } catch (err) {
      await fs.rm(path, { force: true });
      throw err;
    }
    return path;
  }

  async exists(name: string): Promise<boolean> {
    return (await mountPoints()).has(this.pathOf(name));
  }

  /** Unmounts and removes the namespace file; a missing or unmounted one is not an error. */
  async remove(name: string): Promise<void> {
    const path = this.pathOf(name);
    if ((await mountPoints()).has(path)) {
      // Lazy: a process still inside keeps the namespace, but the name is released now.
      await unmountFilesystem(path, true).catch((err: unknown) => {
        throw new NetnsError(errorMessage(err));
      });
    }
    await fs.rm(path, { force: true });
  }

  /** Every namespace file in the directory, mounted or stale. */
  async list(): Promise<NetnsEntry[]> {
    let names: string[];
    try {
      names = (await fs.readdir(this.dir)).sort();
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return [];
      throw err;
    }
    const points = await mountPoints();
    return names.map((name) => ({ name, path: join(this.dir, name), mounted: points.has(join(this.dir, name)) }));
  }
}
