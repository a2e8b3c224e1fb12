// CRI RuntimeService.RunPodSandbox
import { promises as fs } from 'node:fs';
import { status } from '@grpc/grpc-js';
import { StatusError, errorMessage, parseIdRange } from '@skiff/common';
import type { cri } from '@skiff/proto';
import { removeCgroup } from '../cgroups/cgroups.js';
import { seccompFor } from '../container/security-profiles.js';
import type { RuntimeContext } from '../daemon/context.js';
import { mountTmpfs, unmountIfMounted } from '../mounts/mounts.js';
import { writeHostsFile, writePodFilesBeforeNetwork } from '../sandbox/pod-files.js';
import { sandboxRecordFromRequest } from '../sandbox/sandbox-config.js';
import { podWithOverlappingIds } from '../sandbox/user-namespace.js';
import { writeNetworkSysctls, writePodSysctls } from '../sandbox/pod-sysctls.js';
import { buildSandboxSpec, deleteSandboxContainer, runSandboxContainer, type PauseProcess } from '../sandbox/sandbox-container.js';
import type { SandboxPaths } from '../daemon/paths.js';
import type { SeccompInput } from '../oci/spec-builder.js';
import type { SandboxRecord } from '../state/records.js';
import { makePodNamespaces, pinPodNamespaces, podOwnNamespaces, unpinPodNamespaces } from '../sandbox/pod-namespaces.js';
import { pauseReason } from '../sandbox/pause-decision.js';
import { attachSandboxNetwork, detachSandboxNetwork, podNetwork } from '../sandbox/sandbox-network.js';
import { newId } from '../state/ids.js';
import { checkSandboxFeatures } from '../oci/sandboxed-spec.js';
import { letPodRootThrough } from '../state/pod-directory.js';
import { podNameKey } from '../state/state-index.js';
import { requestFingerprint, reserveName } from '../state/name-reservations.js';
import { allSettledOrThrow } from '../util/settle.js';
import { StepTimer } from '@skiff/common';
import { nowNanos } from '../util/time.js';

const SHM_OPTIONS = ['nosuid', 'nodev', 'noexec', 'mode=1777', 'size=67108864'];

/**
 * RunPodSandbox: network namespace (in a user namespace of the pod's own when it asks for one) +
 * CNI, pod files, /dev/shm, and catatonit as the pod's PID 1, whose IPC, UTS and PID namespaces
 * are then pinned on files; or, for a pod that needs no pause (sandbox/pause-decision.ts), its
 * IPC and UTS namespaces made on their files with no process in them.
 * The record (phase "creating") is on disk before CNI ADD and the pause start, and each step
 * registers its undo before it runs (every undo tolerates its object being absent); a failure
 * runs them in reverse, so nothing is left behind, and a crash leaves a "creating" record (or,
 * before it, a directory without one) that start-up recovery tears down the same way.
 *
 * A client that goes away (`signal`: its deadline passed, it cancelled) before the name is
 * reserved stops the call with nothing made. From the reservation on the sandbox is finished
 * whatever the client does, and kept for the kubelet's retry: an identical request gets the
 * sandbox (state/name-reservations.ts).
 */
export async function runPodSandboxCall(ctx: RuntimeContext, request: cri.RunPodSandboxRequest__Output, signal?: AbortSignal): Promise<cri.RunPodSandboxResponse> {
  const startedAt = performance.now();
  const id = newId();
  const timer = new StepTimer(ctx.log, 'RunPodSandbox', { sandbox: id });
  const defaults = { cgroupParent: ctx.config.runtime.cgroup_parent, cgroupDriver: ctx.cgroupDriver, usernsIdRange: parseIdRange(ctx.config.runtime.userns_id_range),
    defaultHandler: ctx.config.runtime.default_handler,
  };
  const rec = sandboxRecordFromRequest(id, request, defaults, nowNanos());
  const handler = ctx.handlers.resolve(rec.runtimeHandler);
  checkSandboxFeatures(handler, rec.userns !== undefined, rec.sysctls);
  if (pauseReason(rec, handler.kind, ctx.config.runtime.pause_every_pod) === undefined) rec.pauseless = true;
  const paths = ctx.paths.sandbox(id);
  const security = request.config?.linux?.security_context ?? null;
  const seccomp = await seccompFor(security?.seccomp ?? null, security?.seccomp_profile_path ?? '');
  // Fails fast on what the spec builder rejects (sysctls, say) before anything is made.
  buildSandboxSpec(ctx, rec, paths, '/proc/self/ns/net', seccomp);
  const network = rec.namespaces.network === 'NODE' ? undefined : await podNetwork(ctx);
  if (network) {
    rec.netnsPath = ctx.netns.pathOf(id);
    rec.network = network;
  }

  timer.mark('validate');
  const nameKey = podNameKey(rec.metadata);
  const holder = await reserveName(ctx.state.podNames, {
    key: nameKey,
    id,
    request: requestFingerprint({ config: request.config, runtime_handler: request.runtime_handler }),
    signal,
    call: 'RunPodSandbox',
    // Checked and reserved with no await between, so two pods started at once cannot share ids.
    check: () => {
      if (!rec.userns) return;
      const other = podWithOverlappingIds(rec.userns, [...ctx.state.sandboxes.values(), ...ctx.state.usernsInFlight()]);
      if (other) throw new StatusError(status.INVALID_ARGUMENT, `RunPodSandbox: the user namespace's host ids overlap those of pod sandbox ${other}`);
    },
    onReserved: () => {
      if (rec.userns) ctx.state.reserveUserns(id, rec.userns);
    },
  });
  if (holder !== id) {
    timer.done('made by an earlier identical request');
    ctx.log.info({ sandbox: holder, pod: nameKey }, 'RunPodSandbox retried: answered with the pod sandbox an earlier identical call made after its client had gone');
    return { pod_sandbox_id: holder };
  }
  const undo: (() => Promise<void>)[] = [];
  try {
    await fs.mkdir(paths.dir, { recursive: false, mode: 0o700 });
    undo.push(() => fs.rm(paths.dir, { recursive: true, force: true }));
    if (rec.userns) await letPodRootThrough(ctx.config.root, paths.dir, rec.userns.gid.hostID);

    if (network) undo.push(() => ctx.netns.remove(id), () => detachSandboxNetwork(ctx, rec));
    if (rec.userns) undo.push(() => unmountIfMounted(paths.userns));
    const podShm = rec.namespaces.ipc !== 'NODE';
    if (podShm) undo.push(() => unmountIfMounted(paths.shm));
    // The namespaces, /dev/shm and the pod files are made while the record is written: a crash
    // before the record is on disk leaves a directory without one, which start-up recovery
    // removes with the namespace and the mounts under it. What recovery could only undo from
    // the record (the address CNI ADD allocates, the pause's cgroup) waits for it.
    await allSettledOrThrow([
      timer.time('record (creating)', ctx.records.saveSandbox(rec)),
      rec.pauseless ? undefined : fs.mkdir(paths.rootfs, { mode: 0o755 }),
      network ? timer.time('netns', rec.userns ? ctx.netns.createInUserNamespace(id, paths.userns, rec.userns) : ctx.netns.create(id)) : undefined,
      podShm ? timer.time('shm', fs.mkdir(paths.shm, { mode: 0o755 }).then(() => mountTmpfs(paths.shm, SHM_OPTIONS))) : undefined,
      timer.time('pod files', writePodFilesBeforeNetwork(rec, paths)),
    ]);
    // runc makes the mount points in it as the pod's root.
    if (rec.userns && !rec.pauseless) await fs.chown(paths.rootfs, rec.userns.uid.hostID, rec.userns.gid.hostID);
    timer.mark('record, netns, shm and rootfs dir');
    if (handler.kind === 'sandbox' && rec.netnsPath) await writeNetworkSysctls(rec.netnsPath, rec.sysctls);
    rec.shmMounted = podShm;

    if (!rec.pauseless && ctx.cgroupDriver === 'cgroupfs') undo.push(() => removeCgroup(rec.cgroupsPath));
    undo.push(() => deleteSandboxContainer(ctx, rec), () => unpinPodNamespaces(paths));
    // The pod network and the pause container only share the namespaces, which exist already:
    // set both up at once (the two slowest steps of a pod start); hosts is written as soon as
    // the addresses are known.
    const [ips, pause] = await allSettledOrThrow([
      network
        ? timer.time(
            'CNI ADD',
            attachSandboxNetwork(ctx, rec).then(async (podIps) => {
              await writeHostsFile(rec, paths, podIps);
              return podIps;
            }),
          )
        : [],
      rec.pauseless ? timer.time('ipc and uts namespaces', makePodNamespaces(rec, paths)) : startPause(ctx, rec, paths, seccomp, timer),
    ]);
    timer.mark(rec.pauseless ? 'network and namespaces' : 'network and pause');
    // After CNI ADD: a sysctl of an interface needs the interface.
    if (rec.pauseless && Object.keys(rec.sysctls).length > 0) await timer.time('sysctls', writePodSysctls(rec.sysctls, { netns: rec.netnsPath, ipcns: paths.ipcns, userns: rec.userns ? paths.userns : undefined }));
    rec.ips = ips;
    if (pause) {
      rec.pid = pause.pid;
      rec.pidStartTime = pause.startTime;
    }
    // Plugins see the pod before anyone else: it is neither listed nor given containers while
    // they take it in, and one that refuses it fails the call, which undoes it.
    if (ctx.nri?.active) await timer.time('NRI RunPodSandbox', ctx.nri.runPodSandbox(rec));

    rec.phase = 'ready';
    await ctx.records.saveSandbox(rec);
    ctx.state.sandboxes.set(id, rec);
    ctx.state.podNames.made(nameKey, id, signal?.aborted ?? false);
    ctx.events.sandbox(rec, 'CONTAINER_CREATED_EVENT');
    ctx.events.sandbox(rec, 'CONTAINER_STARTED_EVENT');
    ctx.state.releaseUserns(id);
    timer.mark('record (ready)');
    timer.done();
    ctx.log.info({ sandbox: id, pod: nameKey, ips: rec.ips.map((i) => i.ip), handler: rec.runtimeHandler, ms: Math.round(performance.now() - startedAt) }, 'pod sandbox ready');
    return { pod_sandbox_id: id };
  } catch (err) {
    for (const step of undo.reverse()) {
      await step().catch((cleanupErr: unknown) => ctx.log.error({ sandbox: id, err: errorMessage(cleanupErr) }, 'cleanup after a failed RunPodSandbox failed'));
    }
    ctx.state.podNames.release(nameKey, id);
    ctx.state.releaseUserns(id);
    timer.done('failed');
    throw err;
  }
}

/** The pause container run, and its namespaces pinned at once: the pod's containers join the files, not its pid. */
async function startPause(ctx: RuntimeContext, rec: SandboxRecord, paths: SandboxPaths, seccomp: SeccompInput, timer: StepTimer): Promise<PauseProcess> {
  const spec = buildSandboxSpec(ctx, rec, paths, rec.netnsPath ?? '', seccomp);
  const pause = await timer.time('runc run pause', runSandboxContainer(ctx, rec, paths, spec));
  await timer.time('pin namespaces', pinPodNamespaces(paths, podOwnNamespaces(rec), pause));
  return pause;
}
