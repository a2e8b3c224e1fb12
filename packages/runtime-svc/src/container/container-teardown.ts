import { isProcessAlive, readPidFile, SANDBOX_RUNTIME_LAUNCHER } from '@skiff/common';
import { removeMonitorFiles } from '../conmon/conmon.js';
import type { RuntimeContext } from '../daemon/context.js';
import type { ContainerRecord } from '../state/records.js';
import { removeRecordDirectory } from '../state/record-store.js';
import { removeCgroup } from '../cgroups/cgroups.js';
import { detachMountsUnder } from '../mounts/mounts.js';
import { imageVolumeIndexes, imageVolumeLeaseHolder } from '../mounts/image-volumes.js';
import { awaitProcessesExit, findProcesses, readArgv } from '../process/processes.js';
import type { StepTimer } from '@skiff/common';
import { killHolder } from './sandboxed-start.js';
import { pauseProcessRunning } from '../sandbox/sandbox-state.js';

/** How long a `runc create` (or `run`) still in flight gets to finish before it is killed. */
const CREATE_GRACE_MS = 15_000;

/**
 * Waits for a `runc create` of `id` that a monitor started (or a `runc run` of a pause process)
 * and has not finished: one finishing after the teardown's `runc delete` would leave a container
 * behind. A monitor stays alive meanwhile, so that it reaps the container's process when runc
 * deletes it.
 */
export async function awaitCreateInFlight(id: string, runcRoot: string): Promise<void> {
  // conmon passes the root as one argument (--root=R); runc run by hand may get two.
  const isCreate = (argv: string[]): boolean =>
    argv.includes(id) &&
    (argv.includes('create') || argv.includes('run')) &&
    (argv.includes(`--root=${runcRoot}`) || argv.includes(runcRoot)) &&
    !argv[0]!.endsWith('conmon') &&
    // The holder a sandbox-kind create leaves behind keeps the launcher's command line for good.
    !argv.includes(SANDBOX_RUNTIME_LAUNCHER);
  const creating = await findProcesses((p) => isCreate(p.argv), isCreate);
  if (creating.length > 0) await awaitProcessesExit(creating, CREATE_GRACE_MS);
}

/** Kills the monitor of `id` if it is still alive (after `runc delete`, it normally exits by itself). */
export async function killMonitor(id: string, conmonPidFile: string): Promise<void> {
  const monitor = await readPidFile(conmonPidFile);
  if (monitor !== undefined && isProcessAlive(monitor) && (await isConmonFor(monitor, id))) process.kill(monitor, 'SIGKILL');
}

/**
 * `runc delete --force`. runsc cannot delete a container of a sandbox whose kernel has died (it
 * asks the sandbox to destroy it): the dead sandbox is deleted first, which takes its containers
 * with it.
 */
async function deleteFromRuntime(ctx: RuntimeContext, rec: Pick<ContainerRecord, 'id' | 'sandboxId' | 'runtimeHandler'>): Promise<void> {
  const handler = ctx.handlers.forExisting(rec.runtimeHandler);
  try {
    await handler.runc.delete(rec.id, { force: true });
  } catch (err) {
    const sandbox = ctx.state.sandboxes.get(rec.sandboxId);
    if (handler.kind !== 'sandbox' || (sandbox && (await pauseProcessRunning(sandbox)))) throw err;
    await handler.runc.delete(rec.sandboxId, { force: true });
    await handler.runc.delete(rec.id, { force: true });
  }
}

/**
 * Removes runc's container of `rec` and what runs and lies beside it: `runc delete --force` (after
 * a `runc create` in flight has finished, when `createMayBeInFlight`), its monitor (and a
 * sandbox-kind holder), conmon's exit file and attach link.
 */
export async function removeFromRuntimeAndMonitor(
  ctx: RuntimeContext,
  rec: Pick<ContainerRecord, 'id' | 'sandboxId' | 'runtimeHandler'>,
  createMayBeInFlight: boolean,
  timer?: StepTimer,
): Promise<void> {
  const paths = ctx.paths.container(rec.id);
  const handler = ctx.handlers.forExisting(rec.runtimeHandler);
  if (createMayBeInFlight) await awaitCreateInFlight(rec.id, handler.runc.root);
  await deleteFromRuntime(ctx, rec);
  timer?.mark('runc delete');
  await killMonitor(rec.id, paths.conmonPidFile);
  if (handler.kind === 'sandbox') await killHolder(rec.id, paths.pidFile);
  await removeMonitorFiles({ id: rec.id, exitDir: ctx.paths.exitDir, socketDir: ctx.paths.attachDir });
  timer?.mark('monitor');
}

/**
 * Removes everything a container may have: runc's container (killed first, after a create in
 * flight has finished), a monitor still alive, conmon's files, its rootfs mount, its cgroup, its
 * directory and its lease on the image's layers. Every step tolerates the thing being gone
 * already, so it serves a failed create, RemoveContainer and start-up recovery alike.
 */
export async function teardownContainer(
  ctx: RuntimeContext,
  rec: Pick<ContainerRecord, 'id' | 'sandboxId' | 'phase' | 'runtimeHandler' | 'cgroupsPath'> & Partial<Pick<ContainerRecord, 'mounts' | 'pid'>>,
  timer?: StepTimer,
): Promise<void> {
  const paths = ctx.paths.container(rec.id);
  // Only a create that never finished (a record from before StartContainer ran `runc create`, or a
  // StartContainer cut short) can have a `runc create` still running.
  await removeFromRuntimeAndMonitor(ctx, rec, rec.phase === 'creating' || (rec.phase === 'created' && rec.pid === undefined), timer);
  await detachMountsUnder(paths.dir);
  timer?.mark('umount');
  if (ctx.cgroupDriver === 'cgroupfs' && rec.cgroupsPath) await removeCgroup(rec.cgroupsPath);
  timer?.mark('cgroup');
  await removeRecordDirectory(paths);
  timer?.mark('rm');
  await ctx.images.releaseLease(rec.id);
  for (const index of imageVolumeIndexes(rec.mounts ?? [])) await ctx.images.releaseLease(imageVolumeLeaseHolder(rec.id, index));
  timer?.mark('lease');
}

/** Guards against a recycled pid: the process must be a conmon naming this container. */
export async function isConmonFor(pid: number, id: string): Promise<boolean> {
  const argv = (await readArgv(pid)) ?? [];
  return argv[0]?.endsWith('conmon') === true && argv.includes(id);
}
