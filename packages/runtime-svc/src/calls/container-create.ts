// CRI RuntimeService.CreateContainer
import { promises as fs } from 'node:fs';
import { join } from 'node:path';
import { status } from '@grpc/grpc-js';
import { StatusError, clientLeft, errorMessage } from '@skiff/common';
import type { ImageRecord } from '@skiff/image-store';
import type { cri } from '@skiff/proto';
import { forgetContainerLog, retrackContainerLog, trackContainerLog, type TrackResult } from '../logs/logs-client.js';
import { noteNewLogFile, removeUnwrittenLogFile } from '../container/new-log-file.js';
import type { RuntimeContext } from '../daemon/context.js';
import { listHostDevices, resolveHostDevice, type ResolvedDevice } from '../oci/devices.js';
import { buildSpec, type ContainerSpecInput } from '../oci/spec-builder.js';
import { adaptSpecToSandbox, checkContainerFeatures } from '../oci/sandboxed-spec.js';
import { isNonRecursiveReadonlyBind, withSubmountsOfReadonlyBinds } from '../oci/sandboxed-submounts.js';
import { mountEntries } from '../mounts/mountinfo.js';
import { requireSandbox } from '../sandbox/require-sandbox.js';
import { sandboxIsReady } from '../sandbox/sandbox-state.js';
import { newId } from '../state/ids.js';
import { letPodRootThrough } from '../state/pod-directory.js';
import type { ContainerRecord, ImageInfo, SandboxRecord } from '../state/records.js';
import { containerNameKey } from '../state/state-index.js';
import { requestFingerprint, reserveName } from '../state/name-reservations.js';
import { cgroupsPathFor } from '../cgroups/cgroups.js';
import { mountOverlay, writableOverlay } from '../mounts/mounts.js';
import { rootfsProtection } from '../container/rootfs-protection.js';
import { checkImageVolumeSubPaths, imageVolumeOverlays, imageVolumesOf, leaseImageVolumes } from '../mounts/image-volumes.js';
import { bindSourcesOf, checkIdmappable, mountIdmappedOverlays, withIdMappings } from '../mounts/idmapped.js';
import { applyCdiEdits, collectCdiEdits, requestedCdiDevices } from '../cdi/cdi-edits.js';
import { readFileInRoot } from '../container/secure-path.js';
import { allSettledOrThrow } from '../util/settle.js';
import { StepTimer } from '@skiff/common';
import { nowNanos } from '../util/time.js';
import { bindMountsOf, ensureHostPaths, makeMissingHostPaths } from '../container/container-mounts.js';
import { containerSpecInput } from '../container/container-spec.js';
import { teardownContainer } from '../container/container-teardown.js';
import { requireJournaldForLog, resolveLogPath } from '../container/log-path.js';
import { seccompFor } from '../container/security-profiles.js';
import { criSignalNumber, parseSignal } from '../container/signals.js';
import { nriContainer } from '../nri/nri-messages.js';
import { NriUnsupportedError } from '../nri/adjustment-merge.js';
import { applyAdjustment as applyNriAdjustment } from '../nri/spec-adjust.js';
import { parseGroup, parsePasswd, resolveUser, UserResolutionError, type ResolvedUser } from '../container/user.js';

const SIGTERM = 15;

function imageInfo(requested: string, userSpecified: string, image: ImageRecord): ImageInfo {
  return {
    requested,
    id: image.id,
    ref: image.repoDigests[0] ?? image.id,
    display: userSpecified || (requested.startsWith('sha256:') ? (image.repoTags[0] ?? requested) : requested),
  };
}

function int64(v: cri.Int64Value__Output | null | undefined): number | undefined {
  return v ? Number(v.value) : undefined;
}

async function containerUser(rootfs: string, imageUser: string, security: cri.LinuxContainerSecurityContext__Output | null): Promise<ResolvedUser> {
  const passwd = parsePasswd((await readFileInRoot(rootfs, '/etc/passwd')) ?? '');
  const groups = parseGroup((await readFileInRoot(rootfs, '/etc/group')) ?? '');
  try {
    return resolveUser(
      {
        imageUser,
        runAsUser: int64(security?.run_as_user),
        runAsGroup: int64(security?.run_as_group),
        runAsUsername: security?.run_as_username || undefined,
        supplementalGroups: (security?.supplemental_groups ?? []).map(Number),
        policy: security?.supplemental_groups_policy === 'Strict' ? 'Strict' : 'Merge',
      },
      passwd,
      groups,
    );
  } catch (err) {
    if (err instanceof UserResolutionError) throw new StatusError(status.INVALID_ARGUMENT, err.message);
    throw err;
  }
}

async function devicesOf(config: cri.ContainerConfig__Output): Promise<ResolvedDevice[]> {
  const out: ResolvedDevice[] = [];
  for (const d of config.devices) out.push(await resolveHostDevice(d.host_path, d.container_path || d.host_path, d.permissions || 'rwm'));
  return out;
}

/** The init pid of the container a TARGET PID namespace names: it must be a running container of the same pod. */
function targetPidOf(ctx: RuntimeContext, sandbox: SandboxRecord, options: cri.NamespaceOption__Output | null): number | undefined {
  if (options?.pid !== 'TARGET') return undefined;
  const target = ctx.state.findContainer(options.target_id);
  if (!target || target.sandboxId !== sandbox.id || target.phase !== 'running' || target.pid === undefined) {
    throw new StatusError(status.NOT_FOUND, `target container "${options.target_id}" for the PID namespace is not a running container of sandbox ${sandbox.id}`);
  }
  return target.pid;
}

function validateRequest(request: cri.CreateContainerRequest__Output): { config: cri.ContainerConfig__Output; name: string; image: string } {
  const config = request.config;
  if (!config) throw new StatusError(status.INVALID_ARGUMENT, 'CreateContainer: config is required');
  const name = config.metadata?.name ?? '';
  if (!name) throw new StatusError(status.INVALID_ARGUMENT, 'CreateContainer: config.metadata.name is required');
  const image = config.image?.image ?? '';
  if (!image) throw new StatusError(status.INVALID_ARGUMENT, `CreateContainer ${name}: config.image.image is required`);
  return { config, name, image };
}

/**
 * CreateContainer: everything that can be refused is checked first; then an overlay rootfs from the
 * image's layers, config.json from the image config and the container config, logs-svc told to
 * write the CRI log file (from the journal, where conmon will send the container's output), and
 * the record, written once as "created". No process exists until StartContainer runs conmon and
 * `runc create` + `runc start`, as containerd does. A failure removes whatever had been made; a
 * crash before the record leaves a directory without one, which start-up recovery removes.
 * A client that went away (`signal`) before the name is reserved stops the call with nothing
 * made; after that, if its deadline passed, the container is finished and an identical request
 * (the kubelet's retry) gets it, as for RunPodSandbox; if it cancelled or went away before its
 * deadline, what was made is undone once its record is written (the last moment before the answer).
 */
export async function createContainerCall(ctx: RuntimeContext, request: cri.CreateContainerRequest__Output, signal?: AbortSignal): Promise<cri.CreateContainerResponse> {
  const { config, name, image: imageRef } = validateRequest(request);
  const sandbox = requireSandbox(ctx, request.pod_sandbox_id);
  const startedAt = performance.now();
  return ctx.locks.run(sandbox.id, async () => {
    const timer = new StepTimer(ctx.log, 'CreateContainer', { sandbox: sandbox.id });
    if (ctx.state.sandboxes.get(sandbox.id) !== sandbox) throw new StatusError(status.NOT_FOUND, `pod sandbox ${sandbox.id} was removed`);
    if (!(await sandboxIsReady(ctx, sandbox))) {
      throw new StatusError(status.FAILED_PRECONDITION, `pod sandbox ${sandbox.id} is not ready (stopped, or its init process exited); containers can only be created in a ready sandbox`);
    }
    const security = config.linux?.security_context ?? null;
    if (security?.privileged && !sandbox.privileged) {
      throw new StatusError(status.INVALID_ARGUMENT, `container ${name} asks to be privileged but its pod sandbox was not created privileged`);
    }
    const targetPid = targetPidOf(ctx, sandbox, security?.namespace_options ?? null);
    const logPath = resolveLogPath(sandbox.logDirectory, config.log_path);
    requireJournaldForLog(ctx.journald, logPath, `CreateContainer ${name}`);
    const mounts = bindMountsOf(config.mounts);
    const imageVolumes = imageVolumesOf(config.mounts);
    const devices = await devicesOf(config);
    // Resolved before anything is made: an unknown device or a bad spec leaves nothing behind.
    const cdi = await collectCdiEdits(await ctx.cdi.resolve(requestedCdiDevices(config)));
    const seccomp = await seccompFor(security?.seccomp ?? null, security?.seccomp_profile_path ?? '');
    const resolved = await ctx.images.resolveRootfs(imageRef);
    const handler = ctx.handlers.resolve(sandbox.runtimeHandler);
    checkContainerFeatures(handler, config, seccomp);

    timer.mark('validate and resolve image');
    const id = newId();
    const nameKey = containerNameKey({ name, attempt: config.metadata?.attempt ?? 0 }, sandbox.metadata);
    // The last point where a client that went away stops the call with nothing made; from here
    // on the container is finished, and kept for the kubelet's identical retry if its deadline passed.
    const holder = await reserveName(ctx.state.containerNames, { key: nameKey, id, request: requestFingerprint({ pod_sandbox_id: sandbox.id, config }), signal, call: 'CreateContainer' });
    if (holder !== id) {
      timer.done('made by an earlier identical request');
      ctx.log.info({ container: holder, name: nameKey }, 'CreateContainer retried: answered with the container an earlier identical call made after its client had gone');
      return { container_id: holder };
    }
    const paths = ctx.paths.container(id);
    const sandboxPaths = ctx.paths.sandbox(sandbox.id);
    const protection = rootfsProtection(security?.privileged ?? false, security?.readonly_rootfs ?? false);
    const criStopSignal = config.stop_signal;
    const imageStopSignal = resolved.config.config?.StopSignal;
    const rec: ContainerRecord = {
      version: 1,
      id,
      sandboxId: sandbox.id,
      phase: 'created',
      metadata: { name, attempt: config.metadata?.attempt ?? 0 },
      fullName: `k8s_${name}_${sandbox.metadata.name}_${sandbox.metadata.namespace}_${sandbox.metadata.uid}_${config.metadata?.attempt ?? 0}`,
      nameKey,
      runtimeHandler: sandbox.runtimeHandler,
      image: imageInfo(imageRef, config.image?.user_specified_image ?? '', resolved.image),
      createdAt: nowNanos(),
      labels: { ...config.labels },
      annotations: { ...config.annotations },
      mounts: config.mounts,
      logPath,
      resources: config.linux?.resources ?? null,
      user: { uid: 0, gid: 0, supplementalGroups: [] },
      stopSignal: criSignalNumber(criStopSignal) ?? (imageStopSignal ? parseSignal(imageStopSignal) : undefined) ?? SIGTERM,
      criStopSignal,
      cgroupsPath: cgroupsPathFor(ctx.cgroupDriver, sandbox.cgroupParent, id),
      tty: config.tty,
      stdin: config.stdin,
      stdinOnce: config.stdin_once,
      rootfsMounted: false,
      remountReadonly: protection.remountReadonlyAfterCreate && handler.kind === 'oci',
    };
    const tracksLog = logPath !== '';
    let leaseOnDisk: Promise<void> | undefined;
    let logTracked: Promise<TrackResult> | undefined;
    let newLogFile = false;
    try {
      // First the directory, where a create cut short notes the log file it is about to make.
      await fs.mkdir(paths.dir, { mode: 0o700 });
      newLogFile = tracksLog && (await noteNewLogFile(paths.newLogFile, logPath));
      // The log file and its directories exist from here on, made beside the rest of the work by
      // logs-svc (or, when it is down, here), never through a symbolic link.
      logTracked = tracksLog ? timer.time('logs-svc track', trackContainerLog(ctx, id, logPath)) : undefined;
      await allSettledOrThrow([logTracked, timer.time('rootfs and spec', prepareContainer())]);
      await leaseOnDisk;
      // Last: a crash before it leaves a directory without a record, which start-up recovery removes.
      await ctx.records.saveContainer(rec);
      timer.mark('record');
      // A client gone before its deadline (a kubelet killed) does not send the call again, and a
      // kubelet started again would take the container for an attempt that never started and
      // make the next one, as restart 1: undone instead. Looked at once the record is on disk, as
      // late as the answer allows: that write is the call's longest wait on a busy disk.
      if (await clientLeft(signal)) throw new StatusError(status.CANCELLED, `CreateContainer ${name}: the client went away before its deadline; what was made is undone`);
      ctx.state.containers.set(id, rec);
      if ((await logTracked) === 'file made here') await retrackContainerLog(ctx, id, logPath);
      ctx.state.containerNames.made(nameKey, id, signal?.aborted ?? false);
      ctx.events.container(rec, 'CONTAINER_CREATED_EVENT');
      if (ctx.nri?.active) await ctx.nri.notifyContainer('PostCreateContainer', sandbox, rec);
      timer.done();
      ctx.log.info({ container: id, name: rec.fullName, image: rec.image.id, ms: Math.round(performance.now() - startedAt) }, 'container created');
      return { container_id: id };
    } catch (err) {
      await teardownContainer(ctx, rec).catch((cleanupErr: unknown) =>
        ctx.log.error({ container: id, err: errorMessage(cleanupErr) }, 'cleanup after a failed CreateContainer failed'),
      );
      if (tracksLog) await forgetContainerLog(ctx, id);
      if (newLogFile) await removeUnwrittenLogFile(logPath, ctx.log);
      ctx.state.containerNames.release(nameKey, id);
      timer.done('failed');
      throw err;
    }

    /** The container's directory, its rootfs and config.json. */
    async function prepareContainer(): Promise<void> {
      const makeDirs = async (): Promise<void> => {
        if (sandbox.userns) await letPodRootThrough(ctx.config.root, paths.dir, sandbox.userns.gid.hostID);
        await Promise.all([paths.upper, paths.work, paths.rootfs, paths.persist].map((dir) => fs.mkdir(dir, { mode: 0o755 })));
      };
      // The lease keeps the image's layers on disk for as long as this container exists. It holds
      // from here on; it reaches the disk beside the rest of the work, before the record.
      const [lease] = await allSettledOrThrow([ctx.images.acquireLeaseNow(id, resolved.image), makeDirs(), makeMissingHostPaths(mounts), ensureHostPaths(cdi.mounts)]);
      leaseOnDisk = lease.durable;
      const { lowerDirs } = lease;
      timer.mark('lease and dirs');
      const volumes = await leaseImageVolumes(ctx.images, id, paths.dir, imageVolumes);
      const specMounts = [...mounts, ...volumes.map((v) => v.bind)];
      const hostDevices = security?.privileged ? await listHostDevices() : [];
      const specInput = (user: ResolvedUser): ContainerSpecInput =>
        applyCdiEdits(containerSpecInput({
          id,
          config,
          image: resolved.config,
          sandbox,
          sandboxPaths,
          rootfs: paths.rootfs,
          user,
          mounts: specMounts,
          devices,
          hostDevices,
          seccomp,
          cgroupsPath: rec.cgroupsPath,
          targetPid,
        }), cdi);
      const imageVolumeDir = join(paths.dir, 'image-volumes');
      const madeOfMappedLayers = (source: string): boolean => source.startsWith(`${imageVolumeDir}/`);
      const userns = sandbox.userns ? { mappings: sandbox.userns, path: sandboxPaths.userns } : undefined;
      const overlays = [await writableOverlay(paths.rootfs, lowerDirs, paths.upper, paths.work, `${paths.dir}/empty`, protection.nodev), ...(await imageVolumeOverlays(paths.dir, volumes))];
      if (userns) {
        // The upper layer's root is the container's "/": it belongs to the pod's root.
        await fs.chown(paths.upper, userns.mappings.uid.hostID, userns.mappings.gid.hostID);
        await mountIdmappedOverlays(userns.path, [...lowerDirs, ...volumes.flatMap((v) => v.lowerDirs)], overlays);
      } else {
        for (const overlay of overlays) await mountOverlay(overlay);
      }
      rec.rootfsMounted = true;
      await checkImageVolumeSubPaths(volumes);
      timer.mark('overlay mounts');

      const user = await containerUser(paths.rootfs, resolved.config.config?.User ?? '', security);
      rec.user = { uid: user.uid, gid: user.gid, supplementalGroups: user.additionalGids };
      const builtSpec = buildSpec(specInput(user), ctx.facts);
      const spec = handler.kind === 'sandbox' ? adaptSpecToSandbox(builtSpec, security?.readonly_rootfs ?? false) : builtSpec;
      // Before the id-mapping of binds: mounts plugins add are mapped like the others.
      if (ctx.nri?.active) {
        const adjustment = await ctx.nri.adjustContainer(sandbox, nriContainer(rec, spec));
        try {
          applyNriAdjustment(spec, adjustment, handler);
        } catch (err) {
          if (err instanceof NriUnsupportedError) throw new StatusError(status.FAILED_PRECONDITION, err.message);
          throw err;
        }
        if (spec.linux.cgroupsPath) rec.cgroupsPath = spec.linux.cgroupsPath;
        timer.mark('NRI');
      }
      // The host's mount table is read only when a bind it could sit below needs it.
      if (handler.kind === 'sandbox' && (spec.mounts ?? []).some(isNonRecursiveReadonlyBind)) {
        spec.mounts = withSubmountsOfReadonlyBinds(spec.mounts ?? [], await mountEntries());
      }
      if (userns) {
        // runc id-maps the binds in the container's mount namespace; image volumes stand on id-mapped layers already.
        await checkIdmappable(userns.path, bindSourcesOf(spec.mounts, madeOfMappedLayers));
        spec.mounts = withIdMappings(spec.mounts, userns.mappings, madeOfMappedLayers);
      }
      rec.ownPidNamespace = spec.linux?.namespaces?.some((ns) => ns.type === 'pid' && ns.path === undefined) === true;
      await fs.writeFile(paths.spec, JSON.stringify(spec), { mode: 0o600 });
      timer.mark('user and spec');
    }
  });
}
