import { promises as fs } from 'node:fs';
import { join } from 'node:path';
import { runCommand } from '@skiff/common';
import type { BindMountInput } from '../oci/spec-builder.js';
import { MountError } from './mounts.js';
import { runNativeHelper } from './native-helpers.js';

async function run(command: string, args: string[]): Promise<void> {
  const result = await runCommand(command, args, { timeoutMs: 30_000 });
  if (result.code !== 0) throw new MountError(`${command} ${args.join(' ')} failed: ${result.stderr.trim() || `exit ${result.code}`}`);
}

/**
 * runc 1.1.5 makes only the top of a bind mount read-only; a recursive read-only mount must be
 * read-only all the way down, submounts included. Each such mount is bind-mounted, recursively
 * and privately, at `<container dir>/rro/<n>` and made read-only there with mount_setattr(2)
 * (AT_RECURSIVE); runc then binds that copy, whose read-only submounts stay read-only. The
 * copies live under the container's directory, so everything that unmounts it (removal, a
 * failed create, recovery) unmounts them too. Answers the mounts as runc gets them.
 */
export async function stageRecursiveReadonly(containerDir: string, mounts: readonly BindMountInput[]): Promise<BindMountInput[]> {
  if (!mounts.some((m) => m.recursiveReadonly)) return [...mounts];
  const staged: BindMountInput[] = [];
  for (const [i, m] of mounts.entries()) {
    if (!m.recursiveReadonly) {
      staged.push(m);
      continue;
    }
    const target = join(containerDir, 'rro', String(i));
    const source = await fs.stat(m.hostPath);
    await fs.mkdir(join(containerDir, 'rro'), { recursive: true, mode: 0o700 });
    if (source.isDirectory()) await fs.mkdir(target);
    else await fs.writeFile(target, '', { flag: 'wx', mode: 0o600 });
    await run('mount', ['--rbind', m.hostPath, target]);
    await run('mount', ['--make-rprivate', target]);
    await runNativeHelper('mount-api', ['rdonly', target], `recursive read-only mount ${m.containerPath}`);
    staged.push({ ...m, hostPath: target });
  }
  return staged;
}
