import { promises as fs } from 'node:fs';
import { errnoCode } from './errno.js';

/** Whether something is at `path` (a link counts as itself). Errors other than ENOENT are thrown. */
export async function pathExists(path: string): Promise<boolean> {
  try {
    await fs.lstat(path);
    return true;
  } catch (err) {
    if (errnoCode(err) === 'ENOENT') return false;
    throw err;
  }
}
