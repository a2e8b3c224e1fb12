import { fileURLToPath } from 'node:url';
import { join } from 'node:path';

/** The repository root: this file is packages/test-support/{src,dist}/workspace.*. */
const ROOT = fileURLToPath(new URL('../../../', import.meta.url));

/** A path in this workspace, from the repository root (e.g. a daemon's built entry point). */
export function workspacePath(relative: string): string {
  return join(ROOT, relative);
}
