import { posix } from 'node:path';
import type { MountEntry } from '../mounts/mountinfo.js';
import type { Mount } from './runtime-spec.js';

export function isNonRecursiveReadonlyBind(m: Mount): boolean {
  const options = m.options ?? [];
  return m.type === 'bind' && m.source !== undefined && options.includes('ro') && !options.includes('rro');
}

/**
 * gVisor serves a bind mount as one filesystem and applies its read-only flag to everything below
 * it, where runc leaves the host's submounts of a non-recursive read-only bind as they are. So each
 * host mount below the source of such a bind is given to runsc as a bind of its own, right after
 * its parent, writable unless the host mount itself is read-only.
 */
export function withSubmountsOfReadonlyBinds(mounts: readonly Mount[], table: readonly MountEntry[]): Mount[] {
  // The last entry for a mount point is the one on top; mountinfo lists parents before children.
  const topmost = new Map(table.map((e) => [e.point, e]));
  const out: Mount[] = [];
  for (const m of mounts) {
    out.push(m);
    if (!isNonRecursiveReadonlyBind(m)) continue;
    const source = posix.normalize(m.source!);
    const below = source.endsWith('/') ? source : `${source}/`;
    for (const entry of topmost.values()) {
      if (!entry.point.startsWith(below) || entry.point === source) continue;
      out.push({
        destination: posix.join(m.destination, posix.relative(source, entry.point)),
        type: 'bind',
        source: entry.point,
        options: ['rbind', 'rprivate', entry.readonly ? 'ro' : 'rw'],
      });
    }
  }
  return out;
}
