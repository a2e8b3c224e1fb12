/**
 * Temporary directories for the end-to-end harness.
 *
 *   makeTempDir(prefix): Promise<string>   fresh directory under the OS temp dir
 *   removeDir(path): Promise<void>         recursive, ignores a missing directory
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

export async function makeTempDir(prefix: string): Promise<string> {
  return mkdtemp(join(tmpdir(), `${prefix}-`));
}

export async function removeDir(path: string): Promise<void> {
  await rm(path, { recursive: true, force: true, maxRetries: 3 });
}
