import { defaultConfig, runCommand } from '@skiff/common';

async function run(file: string, args: string[]): Promise<void> {
  const result = await runCommand(file, args, { timeoutMs: 30_000 });
  if (result.code !== 0) throw new Error(`${file} ${args.join(' ')} failed: ${result.stderr.trim() || `exit ${result.code}`}`);
}

/** Every mount point at or below `dir`, deepest first (the order to unmount them in), as findmnt lists them. */
export async function mountsUnder(dir: string): Promise<string[]> {
  const result = await runCommand('findmnt', ['--raw', '--noheadings', '--output', 'TARGET'], { timeoutMs: 10_000 });
  if (result.code !== 0) throw new Error(`findmnt failed: ${result.stderr.trim()}`);
  // --raw writes unsafe characters (space, backslash...) as \xHH.
  const points = result.stdout
    .split('\n')
    .filter(Boolean)
    .map((p) => p.replace(/\\x([0-9a-fA-F]{2})/g, (_, hex: string) => String.fromCharCode(Number.parseInt(hex, 16))));
  const prefix = dir.endsWith('/') ? dir : `${dir}/`;
  return [...new Set(points)].filter((p) => p === dir || p.startsWith(prefix)).sort((a, b) => b.length - a.length);
}

/** Unmounts everything at or below each directory (lazily when busy: a netns a process still uses). */
export async function unmountAllUnder(...dirs: string[]): Promise<void> {
  for (const dir of dirs) {
    for (const point of await mountsUnder(dir)) {
      const result = await runCommand('umount', [point], { timeoutMs: 30_000 });
      if (result.code !== 0) await run('umount', ['--lazy', point]).catch(() => undefined);
    }
  }
}

/** Force-deletes every container runc knows under the state directory `root`. */
export async function deleteRuncContainers(root: string, runc = defaultConfig().runtime.runc): Promise<void> {
  const listed = await runCommand(runc, ['--root', root, 'list', '--format', 'json'], { timeoutMs: 30_000 });
  if (listed.code !== 0) return; // no state directory: nothing was created
  const containers = (JSON.parse(listed.stdout.trim() || 'null') as { id: string }[] | null) ?? [];
  for (const { id } of containers) await run(runc, ['--root', root, 'delete', '--force', id]).catch(() => undefined);
}
