import { promises as fs } from 'node:fs';
import { errorMessage, mountFilesystem, runCommand, unmountFilesystem } from '@skiff/common';
import { mountEntries, mountPoints } from './mountinfo.js';

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

/** An overlay to mount: where, and its mount(8)-style options (which name its layers). */
export interface OverlayMount {
  target: string;
  options: string[];
}

/**
 * An overlay of `lowerDirs` (top layer first) with a writable upper layer. An image without
 * layers gets an empty directory as its only lower layer, since overlayfs needs one.
 */
export async function writableOverlay(target: string, lowerDirs: readonly string[], upper: string, work: string, emptyLower: string, nodev = false): Promise<OverlayMount> {
  const lowers = lowerDirs.length > 0 ? lowerDirs : [emptyLower];
  if (lowerDirs.length === 0) await fs.mkdir(emptyLower, { recursive: true });
  return { target, options: overlayOptions(lowers, [`upperdir=${upper}`, `workdir=${work}`], nodev ? ['nodev'] : []) };
}

/**
 * A read-only overlay of `lowerDirs` (top first) with no upper layer, nosuid and nodev.
 * overlayfs wants two lower layers when there is no upper one, so an empty one is added.
 */
export async function readonlyOverlay(target: string, lowerDirs: readonly string[], emptyLower: string): Promise<OverlayMount> {
  await fs.mkdir(emptyLower, { recursive: true });
  return { target, options: overlayOptions([...lowerDirs, emptyLower], [], ['ro', 'nosuid', 'nodev']) };
}

export async function mountOverlay(overlay: OverlayMount): Promise<void> {
  await mountCall(() => mountFilesystem('overlay', 'overlay', overlay.target, overlay.options));
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

/** Stacked mounts take a round each; more than this many rounds means something keeps mounting there. */
const DETACH_ROUNDS = 16;

function isAtOrUnder(path: string, dir: string): boolean {
  return path === dir || path.startsWith(dir.endsWith('/') ? dir : `${dir}/`);
}

/**
 * Detaches every mount at or below `dir` that does not stand on another of them (MNT_DETACH takes
 * those below it along), by a path that never follows a link at the mount point (UMOUNT_NOFOLLOW).
 * Mount points below one of them are never resolved: a container that can write there could turn
 * a directory into a link meanwhile. Throws while any mount is left, so that nothing removes files
 * through one.
 */
export async function detachMountsUnder(dir: string): Promise<void> {
  for (let round = 0; ; round++) {
    const under = (await mountEntries()).filter((e) => isAtOrUnder(e.point, dir));
    if (under.length === 0) return;
    if (round === DETACH_ROUNDS) throw new MountError(`mounts under ${dir} could not be detached: ${[...new Set(under.map((e) => e.point))].join(', ')}`);
    const ids = new Set(under.map((e) => e.id));
    const standalone = new Set(under.filter((e) => !ids.has(e.parentId)).map((e) => e.point));
    // One gone meanwhile is not an error: the next round reads the table again.
    for (const point of standalone) await unmountFilesystem(point, true).catch(() => undefined);
  }
}
