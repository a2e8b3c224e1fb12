/**
 * A program from a Debian package, unpacked (never installed) into /var/cache/skiff-test: for
 * tools whose package would collide with what the machine has, or whose installation would
 * start services (prometheus).
 *
 *   debianBinary(pkg, pathInPackage): Promise<string>   the absolute path of the unpacked binary
 *   downloadPackages(specs, dir): Promise<string[]>     `apt-get download` of "name" or "name=version"
 *                                                       into dir; the .deb files in the order asked
 *   aptGet(args): Promise<string>                       apt-get's output; the package lists are
 *                                                       refreshed once when the first try fails
 *   DEBIAN_CACHE_DIR                                    where unpacked packages are kept
 */
import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, readdir, rename, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { promisify } from 'node:util';

const run = promisify(execFile);
export const DEBIAN_CACHE_DIR = '/var/cache/skiff-test';

export async function aptGet(args: string[], cwd?: string): Promise<string> {
  const options = { cwd, timeout: 300_000, maxBuffer: 16 * 1024 * 1024 };
  try {
    return (await run('apt-get', args, options)).stdout;
  } catch {
    await run('apt-get', ['update'], { timeout: 300_000 });
    return (await run('apt-get', args, options)).stdout;
  }
}

export async function downloadPackages(specs: readonly string[], dir: string): Promise<string[]> {
  await aptGet(['download', ...specs], dir);
  const files = await readdir(dir);
  return specs.map((spec) => {
    const name = spec.split('=')[0]!;
    const deb = files.find((n) => n.startsWith(`${name}_`) && n.endsWith('.deb'));
    if (!deb) throw new Error(`apt-get download ${spec} left no .deb in ${dir}`);
    return join(dir, deb);
  });
}

const unpacked = new Map<string, Promise<string>>();

/** Unpacks the package once per machine; concurrent runs each unpack apart and the first rename wins. */
async function unpack(pkg: string, pathInPackage: string): Promise<string> {
  const root = join(DEBIAN_CACHE_DIR, pkg);
  const binary = join(root, pathInPackage);
  if (existsSync(binary)) return binary;
  await mkdir(DEBIAN_CACHE_DIR, { recursive: true, mode: 0o755 });
  const work = await mkdtemp(join(DEBIAN_CACHE_DIR, `${pkg}-`));
  try {
    const [deb] = await downloadPackages([pkg], work);
    await run('dpkg-deb', ['-x', deb!, join(work, 'root')], { timeout: 120_000 });
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
