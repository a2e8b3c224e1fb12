import type { RuntimeContext } from '../daemon/context.js';
import { sandboxHandler } from '../daemon/runtime-handlers.js';
import type { ContainerRecord } from '../state/records.js';
import { cgroupMounts } from '../cgroups/cgroups.js';
import { readCgroupDetail } from './cgroup-detail.js';

/**
 * The directory, below each hierarchy's root, of the cgroup an OCI cgroupsPath names: a path with
 * the cgroupfs driver, "slice:prefix:name" with the systemd driver ("a-b.slice" nests in "a.slice").
 */
export function cgroupDirOf(cgroupsPath: string): string {
  const parts = cgroupsPath.split(':');
  if (parts.length !== 3) return cgroupsPath;
  const [slice = '', prefix = '', name = ''] = parts;
  const words = slice === '-.slice' ? [] : slice.replace(/\.slice$/, '').split('-');
  const slices = words.map((_, i) => `${words.slice(0, i + 1).join('-')}.slice`);
  return `/${[...slices, `${prefix}-${name}.scope`].join('/')}`;
}

/**
 * Whether a container of a sandbox-kind runtime's pod (runsc) ended because the host's OOM killer
 * killed its sandbox: the sandbox's kernel keeps no per-container limit, so memory is bounded by
 * the pod's cgroup as a whole, and going over it ends the whole sandbox.
 */
export async function sandboxOomKilled(ctx: RuntimeContext, rec: ContainerRecord): Promise<boolean> {
  if (!sandboxHandler(ctx.handlers, rec.runtimeHandler)) return false;
  const sandbox = ctx.state.sandboxes.get(rec.sandboxId);
  if (!sandbox) return false;
  const dir = cgroupDirOf(sandbox.cgroupsPath);
  const detail = await readCgroupDetail(new Map([['memory', dir], ['', dir]]), await cgroupMounts());
  return (detail.oomKills ?? 0) > 0;
}
