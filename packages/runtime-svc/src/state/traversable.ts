import { promises as fs } from 'node:fs';
import { dirname, relative } from 'node:path';

/**
 * Lets other users pass through (not list) every directory from `root` down to `dir`: runc
 * prepares a user-namespaced pod's mounts as the pod's root, which is no host user, so the
 * root-only state directories must be traversable for it (0711, as other runtimes keep theirs).
 * Directories outside `root` are left alone; they must be traversable already.
 */
export async function makeTraversable(root: string, dir: string): Promise<void> {
  const rel = relative(root, dir);
  if (rel.startsWith('..')) throw new Error(`${dir} is not inside ${root}`);
  for (let at = dir; ; at = dirname(at)) {
    const st = await fs.stat(at);
    if ((st.mode & 0o011) !== 0o011) await fs.chmod(at, (st.mode & 0o7777) | 0o011);
    if (at === root || at === dirname(at)) break;
  }
}
