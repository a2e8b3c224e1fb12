import { constants, promises as fs } from 'node:fs';
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

/** A file of an image that a container's set-up would read is not a small regular file. */
export class ContainerFileError extends Error {}

/** Larger than any real /etc/passwd or /etc/group; what an image puts there is read no further. */
export const MAX_CONTAINER_FILE_BYTES = 4 * 1024 * 1024;

const READ_FLAGS = constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK | constants.O_NOCTTY;

/**
 * A small regular file of the container's filesystem, read through resolveInRoot; undefined when
 * absent. The image controls what stands there: the open neither follows a link (one swapped in
 * after resolving) nor blocks (a FIFO), and anything but a regular file of at most `maxBytes`
 * (a device such as /dev/zero, a directory, a huge file) is refused without reading it.
 */
export async function readFileInRoot(root: string, path: string, maxBytes = MAX_CONTAINER_FILE_BYTES): Promise<string | undefined> {
  const resolved = await resolveInRoot(root, path);
  let handle: fs.FileHandle;
  try {
    handle = await fs.open(resolved, READ_FLAGS);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === 'ENOENT' || code === 'ENOTDIR') return undefined;
    if (code === 'ELOOP') throw new ContainerFileError(`the image's ${path} is a symbolic link that leaves no regular file`);
    // A device node on a nodev mount cannot be opened at all: say what stands there.
    const st = await fs.lstat(resolved).catch(() => undefined);
    if (st && !st.isFile() && !st.isDirectory()) throw new ContainerFileError(`the image's ${path} is not a regular file (${fileKind(st)}); refusing to read it`);
    throw err;
  }
  try {
    const st = await handle.stat();
    if (st.isDirectory()) return undefined;
    if (!st.isFile()) throw new ContainerFileError(`the image's ${path} is not a regular file (${fileKind(st)}); refusing to read it`);
    if (st.size > maxBytes) throw new ContainerFileError(`the image's ${path} is ${st.size} bytes, more than the ${maxBytes} read for it`);
    const buf = Buffer.alloc(st.size);
    const { bytesRead } = await handle.read(buf, 0, st.size, 0);
    return buf.subarray(0, bytesRead).toString('utf8');
  } finally {
    await handle.close();
  }
}

function fileKind(st: import('node:fs').Stats): string {
  if (st.isFIFO()) return 'a FIFO';
  if (st.isCharacterDevice()) return 'a character device';
  if (st.isBlockDevice()) return 'a block device';
  if (st.isSocket()) return 'a socket';
  return 'not a file';
}
