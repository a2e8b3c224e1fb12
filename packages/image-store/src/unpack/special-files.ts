import { runCommand } from '@skiff/common';

export type SpecialFileKind = 'char-device' | 'block-device' | 'fifo';

export interface SpecialFile {
  /** Relative to the tree root. */
  path: string;
  kind: SpecialFileKind;
  major: number;
  minor: number;
  /** Permission bits. */
  mode: number;
}

function shellQuote(text: string): string {
  return `'${text.replace(/'/g, `'\\''`)}'`;
}

/**
 * Node cannot mknod, so device nodes, FIFOs and overlay whiteouts (0/0 character devices) are made
 * by coreutils' mknod, all of a layer's in one shell run. Parents must already exist and be known
 * to be real directories; mknod never replaces an existing name.
 */
export async function createSpecialFiles(root: string, files: readonly SpecialFile[]): Promise<void> {
  if (files.length === 0) return;
  let script = '';
  for (const file of files) {
    const mode = (file.mode & 0o7777).toString(8).padStart(4, '0');
    const target = shellQuote(`./${file.path}`);
    if (file.kind === 'fifo') script += `mknod -m ${mode} -- ${target} p\n`;
    else script += `mknod -m ${mode} -- ${target} ${file.kind === 'char-device' ? 'c' : 'b'} ${file.major} ${file.minor}\n`;
  }
  const result = await runCommand('sh', ['-e', '-s'], { cwd: root, input: script });
  if (result.code !== 0) throw new Error(`creating device nodes failed: ${result.stderr.trim() || `mknod exited with status ${result.code ?? result.signal}`}`);
}

/** Flushes the filesystems holding `paths` (syncfs of each), in one run of sync. */
export async function syncFilesystems(paths: readonly string[]): Promise<void> {
  if (paths.length === 0) return;
  const result = await runCommand('sync', ['-f', ...paths]);
  if (result.code !== 0) throw new Error(`sync -f ${paths.join(' ')} failed: ${result.stderr.trim()}`);
}
