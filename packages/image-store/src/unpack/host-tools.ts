import type { HostTool } from '@skiff/common';

/**
 * The programs that unpacking layers runs, looked up on PATH like the unpacker spawns them. Only
 * the writer unpacks, so only it needs them.
 */
export const UNPACK_TOOLS: readonly HostTool[] = [
  { name: 'zstd', path: 'zstd', debianPackage: 'zstd' },
  { name: 'setfattr', path: 'setfattr', debianPackage: 'attr' },
  { name: 'getfattr', path: 'getfattr', debianPackage: 'attr' },
  { name: 'mknod', path: 'mknod', debianPackage: 'coreutils' },
  { name: 'sync', path: 'sync', debianPackage: 'coreutils' },
  { name: 'cp', path: 'cp', debianPackage: 'coreutils' },
];
