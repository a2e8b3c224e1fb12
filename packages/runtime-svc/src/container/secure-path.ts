import { promises as fs } from 'node:fs';
import { join } from 'node:path';

/**
 * Resolves `path` inside the directory tree `root` as the container would see it: symlinks are
 * followed, but absolute targets and ".." are taken relative to `root`, so the result can never
 * leave it. Components that do not exist are kept as they are.
 */
export async function resolveInRoot(root: string, path: string, maxLinks = 40): Promise<string> {
  const pending = path.split('/').filter((p) => p && p !== '.');
  const resolved: string[] = [];
  let links = 0;
  while (pending.length > 0) {
    const part = pending.shift()!;
    if (part === '..') {
      resolved.pop();
      continue;
    }
    const candidate = join(root, ...resolved, part);
    let target: string | undefined;
    try {
      const st = await fs.lstat(candidate);
      if (st.isSymbolicLink()) target = await fs.readlink(candidate);
    } catch {
      // missing: keep the name as is
    }
    if (target === undefined) {
      resolved.push(part);
      continue;
    }
    if (++links > maxLinks) throw new Error(`too many symbolic links resolving ${path} in ${root}`);
    if (target.startsWith('/')) resolved.length = 0;
    pending.unshift(...target.split('/').filter((p) => p && p !== '.'));
  }
  return join(root, ...resolved);
}

/** A file of the container's filesystem, read through resolveInRoot; undefined when absent. */
export async function readFileInRoot(root: string, path: string): Promise<string | undefined> {
  try {
    return await fs.readFile(await resolveInRoot(root, path), 'utf8');
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === 'ENOENT' || code === 'ENOTDIR' || code === 'EISDIR') return undefined;
    throw err;
  }
}
