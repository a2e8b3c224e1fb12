import { removeCgroup } from '../cgroups/cgroups.js';
import type { RuntimeContext } from '../daemon/context.js';
import { detachMountsUnder } from '../mounts/mounts.js';
import type { SandboxRecord } from '../state/records.js';
import { removeRecordDirectory } from '../state/record-store.js';
import { deleteSandboxContainer } from './sandbox-container.js';
import type { StepTimer } from '@skiff/common';
import { detachSandboxNetwork } from './sandbox-network.js';

/**
 * Everything a sandbox may own, undone in dependency order; used for removal and for records a
 * crash left in "creating" or "removing".
 */
export async function teardownSandbox(ctx: RuntimeContext, rec: SandboxRecord, timer?: StepTimer): Promise<void> {
  const paths = ctx.paths.sandbox(rec.id);
  await deleteSandboxContainer(ctx, rec);
  timer?.mark('runc delete pause');
  await detachSandboxNetwork(ctx, rec);
  await ctx.netns.remove(rec.id);
  timer?.mark('network');
  await detachMountsUnder(paths.dir);
  timer?.mark('umount');
  if (ctx.cgroupDriver === 'cgroupfs') await removeCgroup(rec.cgroupsPath);
  timer?.mark('cgroup');
  await removeRecordDirectory(paths);
  timer?.mark('rm');
}
