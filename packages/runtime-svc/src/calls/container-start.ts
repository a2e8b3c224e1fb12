// CRI RuntimeService.StartContainer
import { promises as fs } from 'node:fs';
import { status } from '@grpc/grpc-js';
import { StatusError, errorMessage, readProcStat } from '@skiff/common';
import type { cri } from '@skiff/proto';
import { markExited, refreshContainer } from '../container/container-state.js';
import { readExitCode } from '../conmon/exit-file.js';
import { containerState } from '../container/container-view.js';
import { requireContainer, withContainerLock } from '../container/require-container.js';
import type { RuntimeContext } from '../daemon/context.js';
import { sandboxIsReady } from '../sandbox/sandbox-state.js';
import { startInSandbox } from '../container/sandboxed-start.js';
import { createUnderMonitor, START_ERROR_EXIT_CODE, undoCreateUnderMonitor } from '../container/container-launch.js';
import { requireJournaldForLog } from '../container/log-path.js';
import { StepTimer } from '@skiff/common';
import type { ContainerRecord, SandboxRecord } from '../state/records.js';
import { nowNanos } from '../util/time.js';
import { stopIfClientGone } from '../util/client-gone.js';

/**
 * Starts a created container: conmon and `runc create` of the bundle CreateContainer prepared
 * (container-launch.ts), then `runc start` (for a sandbox-kind runtime, the start of its holder's
 * container). If either fails, what the attempt made is undone (runc's container, conmon, its
 * files) and the container is left exited with reason StartError, as containerd leaves it:
 * RemoveContainer removes it. A client that went away (`signal`) before the launch begins leaves
 * the container created; once begun, the start is finished, by a restarted runtime-svc if this one
 * is killed (recovery), and ContainerStatus tells the container's state only once it is.
 */
export async function startContainerCall(ctx: RuntimeContext, request: cri.StartContainerRequest__Output, signal?: AbortSignal): Promise<cri.StartContainerResponse> {
  const rec = requireContainer(ctx, 'StartContainer', request.container_id);
  const timer = new StepTimer(ctx.log, 'StartContainer', { container: rec.id });
  await withContainerLock(ctx, rec, async () => {
    timer.mark('lock');
    await refreshContainer(ctx, rec);
    if (rec.phase !== 'created') {
      throw new StatusError(status.FAILED_PRECONDITION, `container ${rec.id} is ${containerState(rec)}; only a created container can be started`);
    }
    const sandbox = ctx.state.sandboxes.get(rec.sandboxId);
    if (!sandbox || !(await sandboxIsReady(ctx, sandbox))) {
      throw new StatusError(status.FAILED_PRECONDITION, `the pod sandbox ${rec.sandboxId} of container ${rec.id} is not ready`);
    }
    // Created while journald ran, started after runtime-svc came back without it.
    if (rec.pid === undefined) requireJournaldForLog(ctx.journald, rec.logPath, `StartContainer ${rec.id}`);
    timer.mark('checks');
    // The lock may have been waited for: a client that went away meanwhile leaves the container created.
    stopIfClientGone(signal, 'StartContainer');
    if (ctx.nri?.active) await ctx.nri.notifyContainer('StartContainer', sandbox, rec);
    const endLaunch = ctx.state.starts.begin(rec.id);
    let postStart: Promise<void> | undefined;
    try {
      await noteStartBegun(ctx.paths.container(rec.id).starting);
      ({ postStart } = await launch(ctx, rec, sandbox, timer));
    } finally {
      endLaunch();
    }
    await postStart;
    timer.done();
    ctx.log.info({ container: rec.id, name: rec.fullName }, 'container started');
  });
  return {};
}

/**
 * Noted before the launch, so that a runtime-svc killed in the middle finishes the start when it
 * comes back (recovery): the kubelet's StartContainer failed with the connection, and a container
 * it then finds running it keeps, while one left created or exited it replaces. Not synced: it
 * only has to outlive a killed runtime-svc; after a machine's restart recovery finds the
 * container's rootfs unmounted and leaves it exited.
 */
async function noteStartBegun(marker: string): Promise<void> {
  await (await fs.open(marker, 'w', 0o600)).close();
}

/**
 * conmon and `runc create` (unless a record from before StartContainer created containers has its
 * runc container already), then `runc start`, and the record saved running; or, on a failure, the
 * attempt undone and the record saved exited. Returns the NRI PostStartContainer notification
 * under way.
 */
async function launch(ctx: RuntimeContext, rec: ContainerRecord, sandbox: SandboxRecord, timer: StepTimer): Promise<{ postStart: Promise<void> | undefined }> {
  const handler = ctx.handlers.forExisting(rec.runtimeHandler);
  const runc = handler.runc;
  try {
    if (rec.pid === undefined) {
      const monitor = await createUnderMonitor(ctx, rec, timer);
      rec.pid = monitor.containerPid;
      rec.pidStartTime = readProcStat(monitor.containerPid)?.startTime;
      rec.conmonPid = monitor.conmonPid;
    }
    if (handler.kind === 'sandbox' && rec.pid !== undefined) await startInSandbox(runc, rec.id, rec.pid, ctx.paths.container(rec.id).bundle);
    else await runc.start(rec.id);
    timer.mark('runc start');
  } catch (err) {
    timer.done('failed');
    // Exited before the undo, so that the exit conmon records meanwhile is not taken for the container's own.
    markExited(rec, START_ERROR_EXIT_CODE, 'StartError', errorMessage(err));
    await undoCreateUnderMonitor(ctx, rec).catch((undoErr: unknown) =>
      ctx.log.error({ container: rec.id, err: errorMessage(undoErr) }, 'undoing a failed StartContainer failed; RemoveContainer finishes it'),
    );
    rec.pid = undefined;
    rec.pidStartTime = undefined;
    rec.conmonPid = undefined;
    await ctx.records.saveContainer(rec);
    ctx.exitWatch.exitRecorded(rec.id);
    ctx.events.container(rec, 'CONTAINER_STOPPED_EVENT');
    // The pause died since the check above: its pinned PID namespace takes no new process.
    if (!(await sandboxIsReady(ctx, sandbox))) {
      throw new StatusError(status.FAILED_PRECONDITION, `container ${rec.id} could not be started: the pod sandbox ${sandbox.id} is no longer ready (its pause process exited): ${errorMessage(err)}`);
    }
    throw new StatusError(status.INTERNAL, `container ${rec.id} could not be started: ${errorMessage(err)}`);
  }
  rec.phase = 'running';
  rec.startedAt = nowNanos();
  // Queued for NRI plugins as the container becomes running, ahead of the stop of a command that
  // ends at once (recorded by a refresh that may run from now on).
  const postStart = ctx.nri?.active ? ctx.nri.notifyContainer('PostStartContainer', sandbox, rec) : undefined;
  postStart?.catch(() => undefined);
  await ctx.records.saveContainer(rec);
  ctx.events.container(rec, 'CONTAINER_STARTED_EVENT');
  // A command that ended at once left its exit file while the container was still 'created',
  // when its stop could not be streamed ahead of its start: stream it now.
  if ((await readExitCode(ctx.paths.exitDir, rec.id).catch(() => undefined)) !== undefined) {
    refreshContainer(ctx, rec).catch((err: unknown) => ctx.log.warn({ container: rec.id, err: errorMessage(err) }, 'recording an exit failed; the next status call retries'));
  }
  timer.mark('record');
  return { postStart };
}
