/**
 * Debian packages with everything they depend on, unpacked (never installed: no maintainer script
 * runs) into one directory, and that directory as tar entries for an image layer.
 *
 *   debianClosure(packages): Promise<string[]>   "name=version" of every package apt would install
 *                                               for them on an empty system, recommends left out
 *   debianRootfs(packages): Promise<string>      the closure unpacked once per machine, under
 *                                               /var/cache/skiff-test/rootfs-<hash of the closure>
 *   directoryEntries(root, { exclude? }): TarEntry[]   files, directories, symbolic and hard links
 *                                               below root (root itself left out), parents first,
 *                                               owners and modes as on disk
 *   DOC_DIRS                                    usr/share/{doc,man,info,locale,lintian}: left out
 *                                               of image layers
 */
import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, lstatSync, readdirSync, readlinkSync } from 'node:fs';
import { mkdir, mkdtemp, rename, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { aptGet, DEBIAN_CACHE_DIR, downloadPackages } from './debian-binary.js';
import type { TarEntry } from './tar-writer.js';

const run = promisify(execFile);

export const DOC_DIRS = ['usr/share/doc', 'usr/share/man', 'usr/share/info', 'usr/share/locale', 'usr/share/lintian'];

export async function debianClosure(packages: readonly string[]): Promise<string[]> {
  // A simulated install against an empty status file resolves alternatives and virtual
  // packages the way apt does, and lists the whole closure, not only what this host lacks.
  const plan = await aptGet([
    '-s',
    '-o',
    'Dir::State::status=/dev/null',
    '-o',
    'APT::Install-Recommends=false',
    'install',
    ...packages,
  ]);
  const closure: string[] = [];
  for (const line of plan.split('\n')) {
    const match = /^Inst (\S+) \((\S+) /.exec(line);
    if (match) closure.push(`${match[1]}=${match[2]}`);
  }
  for (const pkg of packages) {
    if (!closure.some((spec) => spec.startsWith(`${pkg}=`))) throw new Error(`apt would not install ${pkg}:\n${plan}`);
  }
  return closure.sort();
}

const unpacked = new Map<string, Promise<string>>();

async function unpackClosure(closure: string[]): Promise<string> {
  const key = createHash('sha256').update(closure.join('\n')).digest('hex').slice(0, 16);
  const root = join(DEBIAN_CACHE_DIR, `rootfs-${key}`);
  if (existsSync(root)) return root;
  await mkdir(DEBIAN_CACHE_DIR, { recursive: true, mode: 0o755 });
  const work = await mkdtemp(join(DEBIAN_CACHE_DIR, `rootfs-${key}-`));
  try {
    const debs = await downloadPackages(closure, work);
    for (const deb of debs) await run('dpkg-deb', ['-x', deb, join(work, 'root')], { timeout: 120_000 });
    await rename(join(work, 'root'), root).catch((err: NodeJS.ErrnoException) => {
      if (!existsSync(root)) throw err;
    });
  } finally {
    await rm(work, { recursive: true, force: true });
  }
  return root;
}

export function debianRootfs(packages: readonly string[]): Promise<string> {
  const key = [...packages].sort().join(' ');
  let promise = unpacked.get(key);
  if (!promise) {
    promise = debianClosure(packages).then(unpackClosure);
    promise.catch(() => unpacked.delete(key));
    unpacked.set(key, promise);
  }
  return promise;
}

export interface DirectoryEntriesOptions {
  /** Paths relative to root whose whole subtree is left out. */
  exclude?: readonly string[];
}

export function directoryEntries(root: string, options: DirectoryEntriesOptions = {}): TarEntry[] {
  const exclude = new Set(options.exclude ?? []);
  const entries: TarEntry[] = [];
  const firstNameOfInode = new Map<string, string>();
  const walk = (relative: string): void => {
    for (const name of readdirSync(join(root, relative)).sort()) {
      const path = relative === '' ? name : `${relative}/${name}`;
      if (exclude.has(path)) continue;
      const info = lstatSync(join(root, path));
      const common = { name: path, mode: info.mode & 0o7777, uid: info.uid, gid: info.gid, mtime: Math.floor(info.mtimeMs / 1000) };
      if (info.isDirectory()) {
        entries.push({ ...common, type: 'dir' });
        walk(path);
      } else if (info.isSymbolicLink()) {
        entries.push({ ...common, type: 'symlink', target: readlinkSync(join(root, path)) });
      } else if (info.isFile()) {
        const inode = `${info.dev}:${info.ino}`;
        const first = info.nlink > 1 ? firstNameOfInode.get(inode) : undefined;
        if (first !== undefined) {
          entries.push({ ...common, type: 'hardlink', target: first });
        } else {
          if (info.nlink > 1) firstNameOfInode.set(inode, path);
          entries.push({ ...common, type: 'file', content: { path: join(root, path), size: info.size } });
        }
      } else {
        throw new Error(`${join(root, path)}: not a file, directory or symbolic link`);
      }
    }
  };
  walk('');
  return entries;
}
