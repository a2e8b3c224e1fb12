import { promises as fs, type Stats } from 'node:fs';
import { join } from 'node:path';
import { errnoCode } from '@skiff/common';
import { StoreError } from '../errors.js';
import { isOpaqueDir } from './xattrs.js';

export interface LowerFile {
  absolutePath: string;
  stats: Stats;
  /** lstat of each ancestor directory as seen in the merged view (topmost layer that has it). */
  ancestors: Map<string, Stats>;
}

export function isWhiteoutStats(stats: Stats): boolean {
  return stats.isCharacterDevice() && stats.rdev === 0;
}

async function lstatOrUndefined(path: string): Promise<Stats | undefined> {
  try {
    return await fs.lstat(path);
  } catch (err) {
    if (errnoCode(err) === 'ENOENT') return undefined;
    throw err;
  }
}

/**
 * Finds `target` (relative, already normalized) in the union of `lowerDirs` (top first) the way
 * overlayfs would: whiteouts delete, a non-directory hides everything under its name, and an
 * opaque directory hides the layers beneath it. A symlink on the way is refused, never followed.
 */
export async function lookupInLowerLayers(lowerDirs: readonly string[], target: string, entry: string): Promise<LowerFile | undefined> {
  const components = target.split('/');
  const ancestors = new Map<string, Stats>();
  for (const layerDir of lowerDirs) {
    let hiddenBelow = false;
    for (let i = 0; i < components.length; i++) {
      const relative = components.slice(0, i + 1).join('/');
      const absolutePath = join(layerDir, relative);
      const stats = await lstatOrUndefined(absolutePath);
      if (!stats) break;
      if (isWhiteoutStats(stats)) return undefined;
      if (i === components.length - 1) {
        if (stats.isDirectory()) {
          throw new StoreError('bad-layer', `layer entry ${JSON.stringify(entry)} is a hard link to directory ${JSON.stringify(target)} in a lower layer`);
        }
        return { absolutePath, stats, ancestors };
      }
      if (stats.isSymbolicLink()) {
        throw new StoreError('unsafe-path', `layer entry ${JSON.stringify(entry)} is a hard link whose target ${JSON.stringify(target)} goes through symbolic link ${JSON.stringify(relative)} in a lower layer`);
      }
      if (!stats.isDirectory()) return undefined;
      if (!ancestors.has(relative)) ancestors.set(relative, stats);
      if (await isOpaqueDir(absolutePath)) hiddenBelow = true;
    }
    if (hiddenBelow) return undefined;
  }
  return undefined;
}
