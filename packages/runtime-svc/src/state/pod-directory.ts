import { promises as fs } from 'node:fs';
import { dirname, relative } from 'node:path';

/** A user-namespaced pod's directory: root's, its group the pod's root, which may pass; nobody else may. */
const POD_DIRECTORY_MODE = 0o710;

/**
 * Lets the root of a pod with its own user namespace (host gid `podRootGid`, its mapped gid 0)
 * through `dir`, the directory of its sandbox or of one of its containers, and nobody else on the
 * host: runc prepares the pod's mounts as the pod's root, which is no host user, so it must pass
 * through every directory down to the root filesystems. `dir` becomes root's, with that group and
 * mode 0710; its ancestors from `root` on, shared by every pod, become traversable (not listable)
 * by all (0711): past them lie only such directories and root's own 0700 ones. So no local account
 * can reach the pod's root filesystems, its writable /tmp or its /dev/shm. Directories outside
 * `root` are left alone; they must be traversable already.
 */
export async function letPodRootThrough(root: string, dir: string, podRootGid: number): Promise<void> {
  const rel = relative(root, dir);
  if (rel === '' || rel.startsWith('..')) throw new Error(`${dir} is not inside ${root}`);
  await fs.chown(dir, 0, podRootGid);
  await fs.chmod(dir, POD_DIRECTORY_MODE);
  for (let at = dirname(dir); ; at = dirname(at)) {
    const st = await fs.stat(at);
    if ((st.mode & 0o011) !== 0o011) await fs.chmod(at, (st.mode & 0o7777) | 0o011);
    if (at === root || at === dirname(at)) break;
  }
}
