import { promises as fs } from 'node:fs';
import { dirname, basename, join } from 'node:path';
import { randomBytes } from 'node:crypto';

export async function fsyncDir(dir: string): Promise<void> {
  const handle = await fs.open(dir, 'r');
  try {
    await handle.sync();
  } finally {
    await handle.close();
  }
}

const TEMP_NAME = /^\..+\.[0-9a-f]{12}\.tmp$/;

/** The temp file atomicWriteFile uses for `path`. */
function tempPathFor(path: string): string {
  return join(dirname(path), `.${basename(path)}.${randomBytes(6).toString('hex')}.tmp`);
}

/**
 * Removes the temp files of atomic writes that a crash cut short in `dir` (not recursive).
 * Only for directories whose writer is not running. Resolves with how many were removed.
 */
export async function removeAtomicWriteDebris(dir: string): Promise<number> {
  const names = await fs.readdir(dir).catch(() => [] as string[]);
  const debris = names.filter((n) => TEMP_NAME.test(n));
  await Promise.all(debris.map((n) => fs.rm(join(dir, n), { force: true })));
  return debris.length;
}

/**
 * Crash-safe replace: write a temp file beside the target, fsync it, rename over the target,
 * fsync the directory. A reader sees either the old or the new content, never a mix.
 */
export async function atomicWriteFile(path: string, data: string | Uint8Array, mode = 0o600): Promise<void> {
  const dir = dirname(path);
  const tmp = tempPathFor(path);
  const handle = await fs.open(tmp, 'wx', mode);
  try {
    await handle.writeFile(data);
    await handle.sync();
  } catch (err) {
    await handle.close().catch(() => undefined);
    await fs.rm(tmp, { force: true });
    throw err;
  }
  await handle.close();
  try {
    await fs.rename(tmp, path);
  } catch (err) {
    await fs.rm(tmp, { force: true });
    throw err;
  }
  await fsyncDir(dir);
}

/**
 * The same replace in two stages: `path` holds the new content once this resolves (the temp file
 * renamed over it, with no sync waited for); `durable` resolves once the file and the rename are
 * on disk (fsync of the file, then of the directory). Until then a crash of the machine may leave
 * the old content, none, or a file of the new name with partial content: for files whose owner
 * waits for `durable` before anything on disk depends on them, and whose readers tolerate that.
 */
export async function replaceFileNow(path: string, data: string | Uint8Array, mode = 0o600): Promise<{ durable: Promise<void> }> {
  const tmp = tempPathFor(path);
  try {
    await fs.writeFile(tmp, data, { flag: 'wx', mode });
    await fs.rename(tmp, path);
  } catch (err) {
    await fs.rm(tmp, { force: true });
    throw err;
  }
  const durable = (async () => {
    const handle = await fs.open(path, 'r');
    try {
      await handle.sync();
    } finally {
      await handle.close();
    }
    await fsyncDir(dirname(path));
  })();
  // The owner awaits it; a failure it never reached must not end the process.
  durable.catch(() => undefined);
  return { durable };
}

export async function atomicWriteJson(path: string, value: unknown, mode = 0o600): Promise<void> {
  await atomicWriteFile(path, JSON.stringify(value), mode);
}

export async function readJsonIfExists<T>(path: string): Promise<T | undefined> {
  let text: string;
  try {
    text = await fs.readFile(path, 'utf8');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw err;
  }
  return JSON.parse(text) as T;
}
