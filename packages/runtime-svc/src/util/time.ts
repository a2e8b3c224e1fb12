import { promises as fs } from 'node:fs';

export { nowNanos } from '@skiff/common';

/** A file's modification time in nanoseconds, or undefined when it does not exist. */
export async function fileMtimeNanos(path: string): Promise<string | undefined> {
  try {
    return (await fs.stat(path, { bigint: true })).mtimeNs.toString();
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw err;
  }
}

export function compareNanos(a: string, b: string): number {
  const x = BigInt(a);
  const y = BigInt(b);
  return x < y ? -1 : x > y ? 1 : 0;
}
