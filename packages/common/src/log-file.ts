import { constants, promises as fs } from 'node:fs';
import { isAbsolute, resolve } from 'node:path';

/**
 * Container log files are written by root in directories that others may write to: the kubelet's
 * /var/log/pods is in reach of a log shipper's hostPath, and a CRI client may name any directory.
 * A symbolic link at any level there would have root create or write a file wherever it points
 * (/etc/ld.so.preload, say), so no level is followed: each is opened through the directory above
 * it, by its descriptor, with O_NOFOLLOW. A log root moved to another disk is bind-mounted, not
 * linked: a mount point is a real directory.
 */

/** A log path that runs through a symbolic link, or names something else than a directory or a regular file. */
export class UnsafeLogPath extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'UnsafeLogPath';
  }
}

const DIRECTORY_FLAGS = constants.O_RDONLY | constants.O_DIRECTORY | constants.O_NOFOLLOW;
// O_NONBLOCK: a FIFO put there fails at once (ENXIO) instead of blocking until a reader comes.
const FILE_FLAGS = constants.O_WRONLY | constants.O_CREAT | constants.O_NOFOLLOW | constants.O_NONBLOCK;

/** `name` inside the directory open as `fd`, resolved by the kernel from that very directory. */
function inDirectory(fd: number, name: string): string {
  return `/proc/self/fd/${fd}/${name}`;
}

/** Why opening `at` (shown as `path`) failed: a symbolic link or the wrong kind of file is refused by name. */
async function refusal(err: unknown, at: string, path: string, what: 'directory' | 'file'): Promise<Error> {
  const code = (err as NodeJS.ErrnoException).code;
  if (code !== 'ELOOP' && code !== 'ENOTDIR' && code !== 'ENXIO' && code !== 'EISDIR') return err as Error;
  const st = await fs.lstat(at).catch(() => undefined);
  if (st?.isSymbolicLink()) return new UnsafeLogPath(`refusing container log ${what} ${path}: it is a symbolic link`);
  return new UnsafeLogPath(`refusing container log ${what} ${path}: it is not a ${what === 'file' ? 'regular file' : 'directory'}`);
}

function components(path: string): string[] {
  if (!isAbsolute(path)) throw new UnsafeLogPath(`container log path ${path} is not absolute`);
  if (path.includes('\0')) throw new UnsafeLogPath(`container log path ${JSON.stringify(path)} contains a NUL byte`);
  return resolve(path).split('/').filter(Boolean);
}

/** Opens `name` in the directory `parent` as a directory, making it (mode 0755) when it is missing. */
async function openOrMakeDirectory(parent: fs.FileHandle, name: string, shown: string): Promise<fs.FileHandle> {
  const at = inDirectory(parent.fd, name);
  const open = (): Promise<fs.FileHandle> => fs.open(at, DIRECTORY_FLAGS);
  try {
    return await open();
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw await refusal(err, at, shown, 'directory');
  }
  await fs.mkdir(at, { mode: 0o755 }).catch((err: NodeJS.ErrnoException) => {
    if (err.code !== 'EEXIST') throw err;
  });
  // Whatever stands there now, made by us or swapped in meanwhile, is held to the same rule.
  return open().catch(async (err: unknown) => {
    throw await refusal(err, at, shown, 'directory');
  });
}

/**
 * Opens the directory `path`, making the levels that are missing, without following a symbolic
 * link at any level from "/" down.
 */
export async function openLogDirectory(path: string): Promise<fs.FileHandle> {
  let dir = await fs.open('/', DIRECTORY_FLAGS);
  let shown = '';
  try {
    for (const name of components(path)) {
      shown = `${shown}/${name}`;
      const next = await openOrMakeDirectory(dir, name, shown);
      await dir.close();
      dir = next;
    }
    return dir;
  } catch (err) {
    await dir.close();
    throw err;
  }
}

/**
 * Opens a container's log file to write to it, creating it (0640) and its missing directories,
 * never through a symbolic link: not at the file, not at any directory above it. Anything but a
 * regular file at the path is refused too.
 */
export async function openLogFile(path: string): Promise<fs.FileHandle> {
  const parts = components(path);
  const file = parts.pop();
  if (file === undefined) throw new UnsafeLogPath(`container log path ${path} names no file`);
  const dir = await openLogDirectory(`/${parts.join('/')}`);
  try {
    const shown = `${parts.length > 0 ? `/${parts.join('/')}` : ''}/${file}`;
    const at = inDirectory(dir.fd, file);
    const handle = await fs.open(at, FILE_FLAGS, 0o640).catch(async (err: unknown) => {
      throw await refusal(err, at, shown, 'file');
    });
    if (!(await handle.stat()).isFile()) {
      await handle.close();
      throw new UnsafeLogPath(`refusing container log file ${shown}: it is not a regular file`);
    }
    return handle;
  } finally {
    await dir.close();
  }
}
