import { promises as fs, type Stats } from 'node:fs';
import { dirname } from 'node:path';

function mode(st: Stats): string {
  return (st.mode & 0o7777).toString(8).padStart(4, '0');
}

/** Why a file or directory is not root's alone (owned by root, writable by no one else), or undefined. */
export function notRootsAlone(st: Stats): string | undefined {
  if (st.uid !== 0) return `owned by uid ${st.uid}, not root`;
  const writers = [st.mode & 0o020 ? 'its group' : '', st.mode & 0o002 ? 'others' : ''].filter(Boolean);
  return writers.length > 0 ? `writable by ${writers.join(' and ')} (mode ${mode(st)})` : undefined;
}

/** The directories above `path`, nearest first, ending with '/'. */
function ancestors(path: string): string[] {
  const out: string[] = [];
  for (let p = dirname(path); ; p = dirname(p)) {
    out.push(p);
    if (p === '/') return out;
  }
}

/**
 * Why the directory `dir` is not root's alone, or undefined; 'missing' when there is none. It
 * must be a real directory (not a symbolic link) that only root can change, and so must every
 * directory its path passes through, the links' targets too (a sticky one, as /tmp, may be
 * writable by others: they cannot rename what root owns in it).
 */
export async function whyDirectoryIsNotRootsAlone(dir: string): Promise<string | undefined | 'missing'> {
  let st: Stats;
  try {
    st = await fs.lstat(dir);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return 'missing';
    return `cannot be read: ${(err as Error).message}`;
  }
  if (st.isSymbolicLink()) return 'a symbolic link; name the directory itself';
  if (!st.isDirectory()) return 'not a directory';
  const own = notRootsAlone(st);
  if (own) return own;
  const real = await fs.realpath(dir);
  for (const above of new Set([...ancestors(dir), ...ancestors(real)])) {
    const parent = await fs.stat(above).catch(() => undefined);
    if (!parent?.isDirectory()) return `the directory above it, ${above}, cannot be read`;
    const why = notRootsAlone(parent);
    const stickyAndRoots = parent.uid === 0 && (parent.mode & 0o1000) !== 0;
    if (why && !stickyAndRoots) return `the directory above it, ${above}, is ${why}`;
  }
  return undefined;
}
