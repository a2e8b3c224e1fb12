import { promises as fs } from 'node:fs';
import { errorMessage, mountFilesystem, runCommand, unmountFilesystem } from '@skiff/common';
import { mountPoints } from './mountinfo.js';

export class MountError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'MountError';
  }
}

/** A mount or unmount through @skiff/common, its failure a MountError. */
async function mountCall(call: () => Promise<void>): Promise<void> {
  try {
    await call();
  } catch (err) {
    throw new MountError(errorMessage(err));
  }
}

async function run(args: string[]): Promise<void> {
  const result = await runCommand(args[0]!, args.slice(1), { timeoutMs: 30_000 });
  if (result.code !== 0) throw new MountError(`${args.join(' ')} failed: ${result.stderr.trim() || `exit ${result.code}`}`);
}

/** overlayfs options for `lowerDirs` (top first) and the rest, checked against what the kernel takes. */
function overlayOptions(lowerDirs: readonly string[], rest: readonly string[], prefix: readonly string[]): string[] {
  for (const dir of [...lowerDirs, ...rest]) {
    if (/[,:]/.test(dir)) throw new MountError(`overlay layer path ${dir} contains ',' or ':', which overlayfs options cannot carry`);
  }
  const options = [...prefix, `lowerdir=${lowerDirs.join(':')}`, ...rest];
  // The kernel takes at most one page of mount options.
  if (options.join(',').length >= 4000) throw new MountError(`the image has too many layers (${lowerDirs.length}) for one overlay mount`);
  return options;
}

/**
 * Mounts an overlay of `lowerDirs` (top layer first) with a writable upper layer. An image without
 * layers gets an empty directory as its only lower layer, since overlayfs needs one.
 */
export async function mountOverlay(target: string, lowerDirs: readonly string[], upper: string, work: string, emptyLower: string, nodev = false): Promise<void> {
  const lowers = lowerDirs.length > 0 ? lowerDirs : [emptyLower];
  if (lowerDirs.length === 0) await fs.mkdir(emptyLower, { recursive: true });
  const options = overlayOptions(lowers, [`upperdir=${upper}`, `workdir=${work}`], nodev ? ['nodev'] : []);
  await mountCall(() => mountFilesystem('overlay', 'overlay', target, options));
}

/**
 * A read-only overlay of `lowerDirs` (top first) with no upper layer, noexec, nosuid and nodev.
 * overlayfs wants two lower layers when there is no upper one, so an empty one is added.
 */
export async function mountReadonlyOverlay(target: string, lowerDirs: readonly string[], emptyLower: string): Promise<void> {
  await fs.mkdir(emptyLower, { recursive: true });
  const options = overlayOptions([...lowerDirs, emptyLower], [], ['ro', 'noexec', 'nosuid', 'nodev']);
  await mountCall(() => mountFilesystem('overlay', 'overlay', target, options));
}

/**
 * Makes a mounted overlay read-only for every mount of it, the container's bind of it included
 * (a superblock remount); `nodev` is restated so the mount keeps it.
 */
export async function remountOverlayReadonly(target: string): Promise<void> {
  await run(['mount', '-o', 'remount,ro,nodev', target]);
}

export async function mountTmpfs(target: string, options: readonly string[]): Promise<void> {
  await mountCall(() => mountFilesystem('tmpfs', 'shm', target, options));
}

/** Unmounts when mounted; a busy mount is detached lazily so the path is free at once. */
export async function unmountIfMounted(target: string): Promise<void> {
  if (!(await mountPoints()).has(target)) return;
  try {
    await unmountFilesystem(target);
  } catch {
    await mountCall(() => unmountFilesystem(target, true));
  }
}

/** Every mount point at or below `dir`, deepest first (the order to unmount them in). */
export async function mountsUnder(dir: string): Promise<string[]> {
  const prefix = dir.endsWith('/') ? dir : `${dir}/`;
  return [...(await mountPoints())].filter((p) => p === dir || p.startsWith(prefix)).sort((a, b) => b.length - a.length);
}
