import { activeSpawnServer, runCommand } from './run-command.js';

/** mount(2)'s flags for the options mount(8) turns into flags; every other option is the filesystem's data. */
const MOUNT_FLAGS: Readonly<Record<string, number>> = { ro: 0x1, nosuid: 0x2, nodev: 0x4, noexec: 0x8 };
const MNT_DETACH = 0x2;

export class MountCallError extends Error {
  constructor(
    message: string,
    readonly errno: string | undefined,
  ) {
    super(message);
    this.name = 'MountCallError';
  }
}

/**
 * Mounts `source` of type `fstype` at `target` with mount(8)-style `options`. Made as one system call
 * by the spawn helper when this process runs its commands through one (a fraction of mount(8)'s
 * cost, which reads the mount table and its configuration first), else by running mount(8).
 */
export async function mountFilesystem(fstype: string, source: string, target: string, options: readonly string[]): Promise<void> {
  const server = activeSpawnServer();
  if (server === undefined) {
    await runOrThrow('mount', ['-t', fstype, ...(options.length > 0 ? ['-o', options.join(',')] : []), source, target]);
    return;
  }
  let flags = 0;
  const data: string[] = [];
  for (const option of options) {
    const flag = MOUNT_FLAGS[option];
    if (flag === undefined) data.push(option);
    else flags |= flag;
  }
  const outcome = await server.systemCall({ call: 'mount', source, target, fstype, flags, data: data.join(',') });
  if ('error' in outcome) throw new MountCallError(`mount -t ${fstype} ${source} on ${target} failed: ${outcome.error}`, outcome.errno);
}

/** Unmounts `target`; `lazy` detaches it even while it is busy (MNT_DETACH, umount --lazy). */
export async function unmountFilesystem(target: string, lazy = false): Promise<void> {
  const server = activeSpawnServer();
  if (server === undefined) {
    await runOrThrow('umount', [...(lazy ? ['--lazy'] : []), target]);
    return;
  }
  const outcome = await server.systemCall({ call: 'umount', target, flags: lazy ? MNT_DETACH : 0 });
  if ('error' in outcome) throw new MountCallError(`umount ${target} failed: ${outcome.error}`, outcome.errno);
}

async function runOrThrow(file: string, args: string[]): Promise<void> {
  const result = await runCommand(file, args, { timeoutMs: 30_000 });
  if (result.code !== 0) throw new MountCallError(`${[file, ...args].join(' ')} failed: ${result.stderr.trim() || `exit ${result.code ?? result.signal}`}`, undefined);
}
