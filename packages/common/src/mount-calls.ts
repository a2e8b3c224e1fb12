import { activeSpawnServer, runCommand } from './run-command.js';

/** mount(2)'s flags for the options mount(8) turns into flags; every other option is the filesystem's data. */
const MOUNT_FLAGS: Readonly<Record<string, number>> = { ro: 0x1, nosuid: 0x2, nodev: 0x4, noexec: 0x8 };
const MNT_DETACH = 0x2;
/** The target's last component is never followed: a link planted there cannot redirect an unmount. */
const UMOUNT_NOFOLLOW = 0x8;

/** mount(8)-style options as mount(2) takes them: its flags, and the filesystem's data. */
export function mountFlagsAndData(options: readonly string[]): { flags: number; data: string } {
  let flags = 0;
  const data: string[] = [];
  for (const option of options) {
    const flag = MOUNT_FLAGS[option];
    if (flag === undefined) data.push(option);
    else flags |= flag;
  }
  return { flags, data: data.join(',') };
}

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
  const { flags, data } = mountFlagsAndData(options);
  const outcome = await server.systemCall({ call: 'mount', source, target, fstype, flags, data });
  if ('error' in outcome) throw new MountCallError(`mount -t ${fstype} ${source} on ${target} failed: ${outcome.error}`, outcome.errno);
}

/**
 * Unmounts `target`; `lazy` detaches it even while it is busy (MNT_DETACH, umount --lazy). Through the
 * spawn helper a symbolic link at `target` is not followed (UMOUNT_NOFOLLOW); umount(8), used without
 * the helper, follows it.
 */
export async function unmountFilesystem(target: string, lazy = false): Promise<void> {
  const server = activeSpawnServer();
  if (server === undefined) {
    await runOrThrow('umount', [...(lazy ? ['--lazy'] : []), target]);
    return;
  }
  const outcome = await server.systemCall({ call: 'umount', target, flags: (lazy ? MNT_DETACH : 0) | UMOUNT_NOFOLLOW });
  if ('error' in outcome) throw new MountCallError(`umount ${target} failed: ${outcome.error}`, outcome.errno);
}

async function runOrThrow(file: string, args: string[]): Promise<void> {
  const result = await runCommand(file, args, { timeoutMs: 30_000 });
  if (result.code !== 0) throw new MountCallError(`${[file, ...args].join(' ')} failed: ${result.stderr.trim() || `exit ${result.code ?? result.signal}`}`, undefined);
}
