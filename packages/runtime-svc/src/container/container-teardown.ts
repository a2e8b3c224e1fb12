import { promises as fs } from 'node:fs';
import { isProcessAlive, readPidFile } from '@skiff/common';
import { removeMonitorFiles } from '../conmon/conmon.js';
import type { RuntimeContext } from '../daemon/context.js';
import type { ContainerRecord } from '../state/records.js';
import { removeCgroup } from '../util/cgroups.js';
import { mountsUnder, unmountIfMounted } from '../util/mounts.js';

/**
 * Removes everything a container may have: runc's container (killed first), a monitor still
 * alive, conmon's files, its rootfs mount, its cgroup, its directory and its lease on the image's
 * layers. Every step tolerates
 * the thing being gone already, so it serves a failed create, RemoveContainer and start-up
 * recovery alike.
 */
export async function teardownContainer(ctx: RuntimeContext, rec: Pick<ContainerRecord, 'id' | 'runtimeHandler' | 'cgroupsPath'>): Promise<void> {
  const paths = ctx.paths.container(rec.id);
  const handler = ctx.handlers.forExisting(rec.runtimeHandler);
  await handler.runc.delete(rec.id, { force: true });
  const monitor = await readPidFile(paths.conmonPidFile);
  if (monitor !== undefined && isProcessAlive(monitor) && (await isConmonFor(monitor, rec.id))) process.kill(monitor, 'SIGKILL');
  await removeMonitorFiles({ id: rec.id, exitDir: ctx.paths.exitDir, socketDir: ctx.paths.attachDir });
  for (const mount of await mountsUnder(paths.dir)) await unmountIfMounted(mount);
  if (ctx.cgroupDriver === 'cgroupfs' && rec.cgroupsPath) await removeCgroup(rec.cgroupsPath);
  await fs.rm(paths.dir, { recursive: true, force: true });
  await ctx.images.releaseLease(rec.id);
}

/** Guards against a recycled pid: the process must be a conmon naming this container. */
export async function isConmonFor(pid: number, id: string): Promise<boolean> {
  try {
    const cmdline = (await fs.readFile(`/proc/${pid}/cmdline`, 'utf8')).split('\0');
    return cmdline[0]?.endsWith('conmon') === true && cmdline.includes(id);
  } catch {
    return false;
  }
}
