/**
 * A program from a Debian package, unpacked (never installed) into /var/cache/skiff-test: for
 * tools whose package would collide with what the machine has, or whose installation would
 * start services (prometheus).
 *
 *   debianBinary(pkg, pathInPackage): Promise<string>   the absolute path of the unpacked binary
 */
import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, readdir, rename, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { promisify } from 'node:util';

const run = promisify(execFile);
const CACHE_DIR = '/var/cache/skiff-test';

/** `apt-get download` into `dir`; the package lists are refreshed only when the first try fails. */
async function downloadPackage(pkg: string, dir: string): Promise<string> {
  try {
    await run('apt-get', ['download', pkg], { cwd: dir, timeout: 300_000 });
  } catch {
    await run('apt-get', ['update'], { timeout: 300_000 });
    await run('apt-get', ['download', pkg], { cwd: dir, timeout: 300_000 });
  }
  const deb = (await readdir(dir)).find((n) => n.startsWith(`${pkg}_`) && n.endsWith('.deb'));
  if (!deb) throw new Error(`apt-get download ${pkg} left no .deb in ${dir}`);
  return join(dir, deb);
}

const unpacked = new Map<string, Promise<string>>();

/** Unpacks the package once per machine; concurrent runs each unpack apart and the first rename wins. */
async function unpack(pkg: string, pathInPackage: string): Promise<string> {
  const root = join(CACHE_DIR, pkg);
  const binary = join(root, pathInPackage);
  if (existsSync(binary)) return binary;
  await mkdir(CACHE_DIR, { recursive: true, mode: 0o755 });
  const work = await mkdtemp(join(CACHE_DIR, `${pkg}-`));
  try {
    const deb = await downloadPackage(pkg, work);
    await run('dpkg-deb', ['-x', deb, join(work, 'root')], { timeout: 120_000 });
    await rename(join(work, 'root'), root).catch((err: NodeJS.ErrnoException) => {
      if (!existsSync(binary)) throw err;
    });
  } finally {
    await rm(work, { recursive: true, force: true });
  }
  if (!existsSync(binary)) throw new Error(`Debian's ${pkg} holds no ${pathInPackage}`);
  return binary;
}

export function debianBinary(pkg: string, pathInPackage: string): Promise<string> {
  const key = `${pkg}:${pathInPackage}`;
  let promise = unpacked.get(key);
  if (!promise) {
    promise = unpack(pkg, pathInPackage);
    unpacked.set(key, promise);
  }
  return promise;
}
