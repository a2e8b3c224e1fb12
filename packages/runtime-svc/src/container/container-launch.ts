import { promises as fs } from 'node:fs';
import { join } from 'node:path';
import type { StepTimer } from '@skiff/common';
import { createContainerWithMonitor, type LogDriver, type MonitoredContainer } from '../conmon/conmon.js';
import type { RuntimeContext } from '../daemon/context.js';
import { runtimeForConmon } from '../daemon/runtime-handlers.js';
import { remountOverlayReadonly } from '../mounts/mounts.js';
import type { ContainerRecord } from '../state/records.js';
import { removeFromRuntimeAndMonitor } from './container-teardown.js';
import { startGatePath } from './sandboxed-start.js';

/** The exit code of a container whose StartContainer failed (no process of it ever ran). */
export const START_ERROR_EXIT_CODE = 128;

/**
 * The first half of StartContainer: `runc create` of the bundle CreateContainer prepared, under
 * conmon, whose output goes to the journal tagged with the container id (logs-svc writes the CRI
 * log file from there). Without journald only a container without a log file runs (StartContainer
 * checks): its output goes to a file in the container's own directory, which only root can reach.
 * An unprivileged read-only root is then remounted read-only (rootfs-protection.ts), before
 * anything of the container runs.
 */
export async function createUnderMonitor(ctx: RuntimeContext, rec: ContainerRecord, timer: StepTimer): Promise<MonitoredContainer> {
  const paths = ctx.paths.container(rec.id);
  const handler = ctx.handlers.forExisting(rec.runtimeHandler);
  const logDrivers: LogDriver[] = ctx.journald ? [{ driver: 'journald' }] : [{ driver: 'k8s-file', path: paths.fallbackLog }];
  const monitor = await createContainerWithMonitor({
    conmonPath: ctx.config.runtime.conmon,
    runtime: runtimeForConmon(handler),
    id: rec.id,
    name: rec.fullName,
    bundle: paths.bundle,
    containerPidFile: paths.pidFile,
    conmonPidFile: paths.conmonPidFile,
    exitDir: ctx.paths.exitDir,
    persistDir: paths.persist,
    socketDir: ctx.paths.attachDir,
    logDrivers,
    ...(ctx.journald ? { logTag: rec.id } : {}),
    terminal: rec.tty,
    stdin: rec.stdin,
    leaveStdinOpen: rec.stdin && !rec.stdinOnce,
  });
  timer.mark('conmon + runc create');
  if (rec.remountReadonly) {
    await remountOverlayReadonly(paths.rootfs);
    timer.mark('read-only root');
  }
  return monitor;
}

/**
 * Undoes what a StartContainer that did not finish made: a `runc create` still in flight is waited
 * for, then runc's container, its monitor (and a sandbox-kind holder) and the files conmon wrote
 * go. The rootfs, its mounts and config.json stay; so does a read-only remount (made only once
 * `runc create` succeeded, after which a failed start leaves the container exited).
 */
export async function undoCreateUnderMonitor(ctx: RuntimeContext, rec: ContainerRecord): Promise<void> {
  const paths = ctx.paths.container(rec.id);
  await removeFromRuntimeAndMonitor(ctx, rec, true);
  const conmonFiles = [paths.pidFile, paths.conmonPidFile, join(paths.persist, 'exit'), join(paths.persist, 'oom'), join(paths.bundle, 'attach'), join(paths.bundle, 'ctl'), join(paths.bundle, 'winsz'), startGatePath(paths.bundle)];
  await Promise.all(conmonFiles.map((file) => fs.rm(file, { force: true })));
}
