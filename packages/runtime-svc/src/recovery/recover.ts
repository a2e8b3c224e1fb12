import { leaseOwner } from '../mounts/image-volumes.js';
import { promises as fs } from 'node:fs';
import { join } from 'node:path';
import { pathExists, readPidFile, removeAtomicWriteDebris, errorMessage } from '@skiff/common';
import { removeMonitorFiles } from '../conmon/conmon.js';
import { markExited, refreshContainer, UNKNOWN_EXIT_CODE } from '../container/container-state.js';
import { awaitCreateInFlight, killMonitor, teardownContainer } from '../container/container-teardown.js';
import type { RuntimeContext } from '../daemon/context.js';
import { teardownSandbox } from '../sandbox/sandbox-teardown.js';
import { FULL_ID } from '../state/ids.js';
import type { ContainerRecord, SandboxRecord } from '../state/records.js';
import { podNameKey } from '../state/state-index.js';
import { CGROUP_ROOT, removeCgroup } from '../cgroups/cgroups.js';
import { detachMountsUnder } from '../mounts/mounts.js';
import { mountPoints } from '../mounts/mountinfo.js';
import { releaseStartGate } from '../container/sandboxed-start.js';
import { START_ERROR_EXIT_CODE, undoCreateUnderMonitor } from '../container/container-launch.js';
import { nowNanos } from '../util/time.js';
import { pinMissingNamespaces, pinnedNamespaceFile, podOwnNamespaces } from '../sandbox/pod-namespaces.js';
import { letPodRootThrough } from '../state/pod-directory.js';
import { pauseProcessRunning } from '../sandbox/sandbox-state.js';
import { ProcessGoneError } from '../mounts/native-helpers.js';
import { readProcStat } from '../process/processes.js';
import { notedLogFile, removeUnwrittenLogFile } from '../container/new-log-file.js';
import { forgetContainerLog } from '../logs/logs-client.js';

export interface RecoveryReport {
  sandboxes: number;
  containers: number;
  /** Containers found to have exited while the runtime was down. */
  exitedWhileDown: number;
  /** Half-made or half-removed sandboxes and containers torn down. */
  tornDown: number;
  /** Things no record accounts for (runc containers, namespaces, CNI attachments, files, cgroups) removed. */
  orphansRemoved: number;
  /** Containers whose StartContainer was cut short: created again, to be started (finish-starts.ts). */
  startsToFinish: string[];
  problems: string[];
}

/**
 * Rebuilds the in-memory state from the records and brings it in line with the machine:
 * exits that happened while the runtime was down are learnt from conmon's exit files, and
 * whatever an operation cut short by a crash left behind (records in "creating" or
 * "removing", directories without records, runc containers, network namespaces, CNI
 * attachments, conmon files and cgroups nothing owns) is removed.
 */
export async function recoverState(ctx: RuntimeContext): Promise<RecoveryReport> {
  const report: RecoveryReport = { sandboxes: 0, containers: 0, exitedWhileDown: 0, tornDown: 0, orphansRemoved: 0, startsToFinish: [], problems: [] };
  const attempt = async (what: string, step: () => Promise<void>): Promise<void> => {
    try {
      await step();
    } catch (err) {
      report.problems.push(`${what}: ${errorMessage(err)}`);
      ctx.log.warn({ err: errorMessage(err) }, `recovery: ${what} failed`);
    }
  };
  const loaded = await ctx.records.loadAll();

  for (const stray of loaded.strayDirs) {
    await attempt(`removing ${stray.kind} debris ${stray.dir}`, async () => {
      await removeStray(ctx, stray.kind, stray.id, stray.dir);
      ctx.log.info({ [stray.kind]: stray.id }, `recovery: removed a ${stray.kind} directory without a record`);
      report.tornDown++;
    });
  }

  const liveSandboxes = new Map<string, SandboxRecord>();
  for (const rec of loaded.sandboxes) if (rec.phase === 'ready' || rec.phase === 'stopped') liveSandboxes.set(rec.id, rec);

  const liveContainers: ContainerRecord[] = [];
  for (const rec of loaded.containers) {
    if (rec.phase === 'creating' || rec.phase === 'removing' || !liveSandboxes.has(rec.sandboxId)) {
      await attempt(`tearing down container ${rec.id} (${rec.phase})`, async () => {
        await teardownContainer(ctx, rec);
        ctx.log.info({ container: rec.id, phase: rec.phase }, 'recovery: removed a container an interrupted operation left behind');
        report.tornDown++;
      });
    } else {
      liveContainers.push(rec);
    }
  }

  for (const rec of loaded.sandboxes) {
    if (liveSandboxes.has(rec.id)) continue;
    await attempt(`tearing down sandbox ${rec.id} (${rec.phase})`, async () => {
      await teardownSandbox(ctx, rec);
      ctx.log.info({ sandbox: rec.id, phase: rec.phase, network: rec.network?.name, netns: rec.netnsPath }, 'recovery: removed a sandbox an interrupted operation left behind');
      report.tornDown++;
    });
  }

  // Directories of user-namespaced pods made open to all by earlier versions are closed again.
  const restrictToPodRoot = async (dir: string, sandbox: SandboxRecord | undefined): Promise<void> => {
    const gid = sandbox?.userns?.gid.hostID;
    if (gid !== undefined) await attempt(`restricting ${dir} to the pod's root`, () => letPodRootThrough(ctx.config.root, dir, gid));
  };
  for (const rec of liveSandboxes.values()) {
    await attempt(`checking sandbox ${rec.id}`, () => checkSandbox(ctx, rec));
    await restrictToPodRoot(ctx.paths.sandbox(rec.id).dir, rec);
    ctx.state.sandboxes.set(rec.id, rec);
    ctx.state.podNames.reserve(podNameKey(rec.metadata), rec.id);
    report.sandboxes++;
  }
  for (const rec of liveContainers) {
    const before = rec.phase;
    await attempt(`checking container ${rec.id}`, async () => {
      if ((await checkContainer(ctx, rec)) === 'start to finish') report.startsToFinish.push(rec.id);
    });
    await restrictToPodRoot(ctx.paths.container(rec.id).dir, liveSandboxes.get(rec.sandboxId));
    if (before !== 'exited' && rec.phase === 'exited') report.exitedWhileDown++;
    ctx.state.containers.set(rec.id, rec);
    ctx.state.containerNames.reserve(rec.nameKey, rec.id);
    report.containers++;
  }

  await attempt('removing orphaned runtime state', async () => {
    report.orphansRemoved += await removeOrphans(ctx);
  });
  await attempt('removing temp files of cut-short writes', async () => {
    const dirs = [
      ctx.paths.stateDir,
      ctx.cni.cacheDir,
      ...[...ctx.state.sandboxes.keys()].map((id) => ctx.paths.sandbox(id).dir),
      ...[...ctx.state.containers.keys()].map((id) => ctx.paths.container(id).dir),
    ];
    for (const dir of dirs) report.orphansRemoved += await removeAtomicWriteDebris(dir);
  });
  return report;
}

/**
 * A ready sandbox whose runc container is gone (a reboot, a manual delete) cannot become ready
 * again. One whose pause runs has its namespaces pinned (a pod started before they were). A pod
 * without a pause stays ready while its namespace files are mounted; one whose files lost their
 * namespaces (a reboot) is not ready.
 */
async function checkSandbox(ctx: RuntimeContext, rec: SandboxRecord): Promise<void> {
  if (rec.phase === 'ready' && rec.pauseless) {
    if (rec.namespacesLost || (await podNamespacesMounted(ctx, rec))) return;
    rec.namespacesLost = true;
    await ctx.records.saveSandbox(rec);
    return;
  }
  if (rec.phase !== 'ready' || rec.pid === undefined) return;
  const state = await ctx.handlers.forExisting(rec.runtimeHandler).runc.stateIfExists(rec.id);
  if (!state) {
    rec.pid = undefined;
    await ctx.records.saveSandbox(rec);
    return;
  }
  if (!(await pauseProcessRunning(rec))) return;
  // A record without a start time trusts its pid, as it always did.
  const startTime = rec.pidStartTime ?? readProcStat(rec.pid)?.startTime;
  if (startTime === undefined) return;
  const pinned = await pinMissingNamespaces(rec, ctx.paths.sandbox(rec.id), { pid: rec.pid, startTime }).catch((err: unknown) => {
    if (err instanceof ProcessGoneError) return [];
    throw err;
  });
  if (pinned.length > 0) ctx.log.info({ sandbox: rec.id, namespaces: pinned }, "recovery: pinned the pod's namespaces");
}

async function podNamespacesMounted(ctx: RuntimeContext, rec: SandboxRecord): Promise<boolean> {
  const paths = ctx.paths.sandbox(rec.id);
  const files = podOwnNamespaces(rec).map((kind) => pinnedNamespaceFile(paths, kind));
  if (rec.netnsPath) files.push(rec.netnsPath);
  if (rec.userns) files.push(paths.userns);
  const points = await mountPoints();
  return files.every((file) => points.has(file));
}

async function checkContainer(ctx: RuntimeContext, rec: ContainerRecord): Promise<'start to finish' | undefined> {
  if (rec.phase !== 'created' && rec.phase !== 'running') return;
  await refreshContainer(ctx, rec);
  if (rec.phase !== 'created' && rec.phase !== 'running') return;
  if (rec.phase === 'created' && rec.pid === undefined) return checkNotStarted(ctx, rec);
  // The pid may belong to another process by now (after a reboot); runc knows whether it is ours.
  const handler = ctx.handlers.forExisting(rec.runtimeHandler);
  const state = await handler.runc.stateIfExists(rec.id);
  // A start cut short before the holder of a sandbox-kind container was told: it waits until told.
  if (state?.status === 'running' && handler.kind === 'sandbox') await releaseStartGate(ctx.paths.container(rec.id).bundle);
  if (state?.status === 'running' && rec.phase === 'created') {
    // A StartContainer cut short between `runc start` and saving the record: the container runs.
    rec.phase = 'running';
    rec.startedAt = nowNanos();
    await ctx.records.saveContainer(rec);
    return;
  }
  if (state && state.status !== 'stopped') return;
  await saveExited(ctx, rec, UNKNOWN_EXIT_CODE, 'Error', 'the container was gone when the runtime started again, with no exit code recorded');
}

/**
 * A created container whose record has no process: CreateContainer's, with no StartContainer yet
 * (nothing to do: it can be started, unless a reboot took its rootfs mount, which leaves it exited),
 * or with one the crash cut short. A start that got as far as `runc start` left the container
 * running: it is recorded so. One cut short before is undone, and the start is to be finished
 * (its StartContainer had begun the launch, container-start.ts), else the container is left
 * exited with reason StartError, as a StartContainer that fails leaves it.
 */
async function checkNotStarted(ctx: RuntimeContext, rec: ContainerRecord): Promise<'start to finish' | undefined> {
  const paths = ctx.paths.container(rec.id);
  const handler = ctx.handlers.forExisting(rec.runtimeHandler);
  await awaitCreateInFlight(rec.id, handler.runc.root);
  const state = await handler.runc.stateIfExists(rec.id);
  if (state?.status === 'running') {
    const [pid, conmonPid] = await Promise.all([readPidFile(paths.pidFile), readPidFile(paths.conmonPidFile)]);
    if (pid !== undefined && conmonPid !== undefined) {
      if (handler.kind === 'sandbox') await releaseStartGate(paths.bundle);
      rec.pid = pid;
      rec.conmonPid = conmonPid;
      rec.phase = 'running';
      rec.startedAt = nowNanos();
      await ctx.records.saveContainer(rec);
      return;
    }
  }
  if (state || (await pathExists(paths.conmonPidFile)) || (await pathExists(paths.pidFile))) await undoCreateUnderMonitor(ctx, rec);
  // After a reboot the record outlives its rootfs mount: there is nothing left to start.
  if (!(await mountPoints()).has(paths.rootfs)) {
    await saveExited(ctx, rec, UNKNOWN_EXIT_CODE, 'Error', 'its root filesystem was no longer mounted when the runtime started again (the machine restarted?); it was never started');
    return;
  }
  if (await pathExists(paths.starting)) return 'start to finish';
  if (!state) return;
  await saveExited(ctx, rec, START_ERROR_EXIT_CODE, 'StartError', 'runtime-svc was restarted while StartContainer ran; the container was not started');
}

/** Records the container as exited now, for a reason recovery found. */
async function saveExited(ctx: RuntimeContext, rec: ContainerRecord, exitCode: number, reason: string, message: string): Promise<void> {
  markExited(rec, exitCode, reason, message);
  await ctx.records.saveContainer(rec);
}

/** A sandbox or container directory without a readable record: its create never got further than that. */
async function removeStray(ctx: RuntimeContext, kind: 'sandbox' | 'container', id: string, dir: string): Promise<void> {
  const newLogFile = kind === 'container' ? await notedLogFile(ctx.paths.container(id).newLogFile) : undefined;
  for (const handler of ctx.handlers.all()) {
    await awaitCreateInFlight(id, handler.runc.root);
    await handler.runc.delete(id, { force: true });
  }
  await killMonitor(id, join(dir, 'conmon.pid'));
  if (kind === 'sandbox') await removeAttachments(ctx, id);
  await ctx.netns.remove(id);
  await detachMountsUnder(dir);
  await removeMonitorFiles({ id, exitDir: ctx.paths.exitDir, socketDir: ctx.paths.attachDir });
  await fs.rm(dir, { recursive: true, force: true });
  if (newLogFile) {
    await forgetContainerLog(ctx, id);
    await removeUnwrittenLogFile(newLogFile, ctx.log);
  }
}

/** CNI DEL of every cached attachment of `containerId` (addresses, port rules), with or without its namespace. */
async function removeAttachments(ctx: RuntimeContext, containerId: string): Promise<number> {
  let removed = 0;
  const mounted = await ctx.netns.exists(containerId);
  for (const { network, attachment } of await ctx.cni.cachedAttachments()) {
    if (attachment.containerId !== containerId) continue;
    const netns = mounted ? attachment.netns : '';
    if (netns || attachment.ifName !== 'lo') await ctx.cni.del(network, { ...attachment, netns });
    else await ctx.cni.forget(network, attachment);
    removed++;
  }
  return removed;
}

async function listDir(dir: string): Promise<string[]> {
  return fs.readdir(dir).catch(() => [] as string[]);
}

/** Removes runtime objects of ids no live record has. */
async function removeOrphans(ctx: RuntimeContext): Promise<number> {
  const known = new Set<string>([...ctx.state.sandboxes.keys(), ...ctx.state.containers.keys()]);
  let removed = 0;
  for (const handler of ctx.handlers.all()) {
    const listed = await handler.runc.list().catch(() => []);
    for (const c of listed) {
      if (known.has(c.id)) continue;
      await handler.runc.delete(c.id, { force: true });
      removed++;
    }
  }
  const attachmentOwners = new Set((await ctx.cni.cachedAttachments()).map((a) => a.attachment.containerId));
  for (const owner of attachmentOwners) {
    if (!known.has(owner)) removed += await removeAttachments(ctx, owner);
  }
  for (const entry of await ctx.netns.list()) {
    if (known.has(entry.name)) continue;
    await ctx.netns.remove(entry.name);
    removed++;
  }
  for (const lease of await ctx.images.listLeases()) {
    const owner = leaseOwner(lease.holder);
    if (!FULL_ID.test(owner) || known.has(owner)) continue;
    await ctx.images.releaseLease(lease.holder);
    removed++;
  }
  for (const dir of [ctx.paths.exitDir, ctx.paths.attachDir]) {
    for (const name of await listDir(dir)) {
      if (!FULL_ID.test(name) || known.has(name)) continue;
      await fs.rm(join(dir, name), { recursive: true, force: true });
      removed++;
    }
  }
  if (ctx.cgroupDriver === 'cgroupfs') {
    const parent = ctx.config.runtime.cgroup_parent.replace(/^\/+/, '');
    const seen = new Set<string>();
    for (const hierarchy of await listDir(CGROUP_ROOT)) {
      for (const name of await listDir(join(CGROUP_ROOT, hierarchy, parent))) {
        if (FULL_ID.test(name) && !known.has(name)) seen.add(name);
      }
    }
    for (const id of seen) {
      await removeCgroup(`${parent}/${id}`);
      removed++;
    }
  }
  return removed;
}
