import { promises as fs } from 'node:fs';
import { status } from '@grpc/grpc-js';
import { StatusError, errorMessage } from '@skiff/common';
import type { cri } from '@skiff/proto';
import { removeContainerLocked, stopContainerLocked } from '../container/container-lifecycle.js';
import { seccompFor } from '../container/security-profiles.js';
import type { RuntimeContext } from '../daemon/context.js';
import { newId } from '../state/ids.js';
import type { SandboxRecord } from '../state/records.js';
import { podNameKey } from '../state/state-index.js';
import { removeCgroup } from '../util/cgroups.js';
import { allSettledOrThrow } from '../util/settle.js';
import { mountTmpfs, mountsUnder, unmountIfMounted } from '../util/mounts.js';
import { nowNanos } from '../util/time.js';
import { buildSandboxSpec, deleteSandboxContainer, runSandboxContainer, stopSandboxContainer } from './sandbox-container.js';
import { sandboxRecordFromRequest } from './sandbox-config.js';
import { attachSandboxNetwork, detachSandboxNetwork, podNetwork } from './sandbox-network.js';
import { hasDnsSettings, renderHosts, renderResolvConf } from './pod-files.js';

const SHM_OPTIONS = 'nosuid,nodev,noexec,mode=1777,size=67108864';
/** How long catatonit gets to exit on SIGTERM before it is killed. */
const SANDBOX_STOP_GRACE_MS = 10_000;

async function writePodFiles(rec: SandboxRecord, paths: ReturnType<RuntimeContext['paths']['sandbox']>): Promise<void> {
  const hostNetwork = rec.namespaces.network === 'NODE';
  await fs.writeFile(paths.hostname, `${rec.hostname}\n`, { mode: 0o644 });
  if (hostNetwork) await fs.copyFile('/etc/hosts', paths.hosts).catch(() => fs.writeFile(paths.hosts, renderHosts(rec.hostname, [])));
  else await fs.writeFile(paths.hosts, renderHosts(rec.hostname, rec.ips), { mode: 0o644 });
  if (hasDnsSettings(rec.dnsConfig)) await fs.writeFile(paths.resolvConf, renderResolvConf(rec.dnsConfig), { mode: 0o644 });
  else await fs.copyFile('/etc/resolv.conf', paths.resolvConf).catch(() => fs.writeFile(paths.resolvConf, ''));
  await fs.chmod(paths.hosts, 0o644);
  await fs.chmod(paths.resolvConf, 0o644);
}

/**
 * RunPodSandbox: network namespace + CNI, pod files, /dev/shm, and catatonit as the pod's PID 1.
 * The record is written first (phase "creating") and each step registers its undo before it
 * runs (every undo tolerates its object being absent); a failure runs them in reverse, so nothing
 * is left behind, and a crash leaves a "creating" record that start-up recovery tears down the
 * same way.
 */
export async function runPodSandbox(ctx: RuntimeContext, request: cri.RunPodSandboxRequest__Output): Promise<string> {
  const startedAt = performance.now();
  const id = newId();
  const rec = sandboxRecordFromRequest(id, request, { cgroupParent: ctx.config.runtime.cgroup_parent, cgroupDriver: ctx.cgroupDriver }, nowNanos());
  ctx.handlers.resolve(rec.runtimeHandler);
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

  const nameKey = podNameKey(rec.metadata);
  ctx.state.reservePodName(nameKey, id);
  const undo: (() => Promise<void>)[] = [];
  try {
    await fs.mkdir(paths.dir, { recursive: false, mode: 0o700 });
    undo.push(() => fs.rm(paths.dir, { recursive: true, force: true }));
    await ctx.records.saveSandbox(rec);

    if (network) undo.push(() => ctx.netns.remove(id), () => detachSandboxNetwork(ctx, rec));
    const podShm = rec.namespaces.ipc !== 'NODE';
    if (podShm) undo.push(() => unmountIfMounted(paths.shm));
    await allSettledOrThrow([
      fs.mkdir(paths.rootfs, { mode: 0o755 }),
      network ? ctx.netns.create(id) : undefined,
      podShm ? fs.mkdir(paths.shm, { mode: 0o755 }).then(() => mountTmpfs(paths.shm, SHM_OPTIONS)) : undefined,
    ]);
    rec.shmMounted = podShm;

    const spec = buildSandboxSpec(ctx, rec, paths, rec.netnsPath ?? '', seccomp);
    if (ctx.cgroupDriver === 'cgroupfs') undo.push(() => removeCgroup(rec.cgroupsPath));
    undo.push(() => deleteSandboxContainer(ctx, rec));
    // The pod network and the pause container only share the namespace, which exists already:
    // set both up at once (the two slowest steps of a pod start).
    const [ips, pause] = await allSettledOrThrow([network ? attachSandboxNetwork(ctx, rec) : [], runSandboxContainer(ctx, rec, paths, spec)]);
    rec.ips = ips;
    rec.pid = pause.pid;
    rec.pidStartTime = pause.startTime;
    await writePodFiles(rec, paths);

    rec.phase = 'ready';
    await ctx.records.saveSandbox(rec);
    ctx.state.sandboxes.set(id, rec);
    ctx.log.info({ sandbox: id, pod: nameKey, ips: rec.ips.map((i) => i.ip), handler: rec.runtimeHandler, ms: Math.round(performance.now() - startedAt) }, 'pod sandbox ready');
    return id;
  } catch (err) {
    for (const step of undo.reverse()) {
      await step().catch((cleanupErr: unknown) => ctx.log.error({ sandbox: id, err: errorMessage(cleanupErr) }, 'cleanup after a failed RunPodSandbox failed'));
    }
    ctx.state.releasePodName(nameKey, id);
    throw err;
  }
}

/**
 * The part of stopping that concerns the sandbox itself: catatonit, the network, the namespace
 * and /dev/shm. Each step tolerates its object being gone, so it can run again after a failure.
 */
async function releaseSandboxRuntime(ctx: RuntimeContext, rec: SandboxRecord): Promise<void> {
  await stopSandboxContainer(ctx, rec, SANDBOX_STOP_GRACE_MS);
  await detachSandboxNetwork(ctx, rec);
  await ctx.netns.remove(rec.id);
  // No namespace path left means nothing left to detach: later stops and the removal skip CNI.
  rec.netnsPath = undefined;
  await unmountIfMounted(ctx.paths.sandbox(rec.id).shm);
}

/** StopPodSandbox with the sandbox's lock held: every container killed, then the sandbox's own resources. */
export async function stopPodSandboxLocked(ctx: RuntimeContext, rec: SandboxRecord): Promise<void> {
  // Each container's stop waits for its exit and its last log lines: all at once, not one by one.
  await allSettledOrThrow(
    ctx.state.containersOf(rec.id).map((container) =>
      ctx.locks.run(container.id, async () => {
        if (ctx.state.containers.get(container.id) === container) await stopContainerLocked(ctx, container, 0);
      }),
    ),
  );
  const wasStopped = rec.phase === 'stopped';
  await releaseSandboxRuntime(ctx, rec);
  rec.phase = 'stopped';
  rec.ips = [];
  await ctx.records.saveSandbox(rec);
  if (!wasStopped) ctx.log.info({ sandbox: rec.id }, 'pod sandbox stopped');
}

/** RemovePodSandbox with the sandbox's lock held: stop, remove every container, then the sandbox. */
export async function removePodSandboxLocked(ctx: RuntimeContext, rec: SandboxRecord): Promise<void> {
  if (rec.phase !== 'removing') await stopPodSandboxLocked(ctx, rec);
  await allSettledOrThrow(
    ctx.state.containersOf(rec.id).map((container) =>
      ctx.locks.run(container.id, async () => {
        if (ctx.state.containers.get(container.id) === container) await removeContainerLocked(ctx, container);
      }),
    ),
  );
  rec.phase = 'removing';
  await ctx.records.saveSandbox(rec);
  await teardownSandbox(ctx, rec);
  ctx.state.sandboxes.delete(rec.id);
  ctx.state.releasePodName(podNameKey(rec.metadata), rec.id);
  ctx.log.info({ sandbox: rec.id }, 'pod sandbox removed');
}

/**
 * Everything a sandbox may own, undone in dependency order; used for removal and for records a
 * crash left in "creating" or "removing".
 */
export async function teardownSandbox(ctx: RuntimeContext, rec: SandboxRecord): Promise<void> {
  const paths = ctx.paths.sandbox(rec.id);
  await deleteSandboxContainer(ctx, rec);
  await detachSandboxNetwork(ctx, rec);
  await ctx.netns.remove(rec.id);
  for (const mount of await mountsUnder(paths.dir)) await unmountIfMounted(mount);
  if (ctx.cgroupDriver === 'cgroupfs') await removeCgroup(rec.cgroupsPath);
  await fs.rm(paths.dir, { recursive: true, force: true });
}

/** A sandbox by id or prefix, or NotFound. */
export function requireSandbox(ctx: RuntimeContext, id: string): SandboxRecord {
  if (!id) throw new StatusError(status.INVALID_ARGUMENT, 'pod_sandbox_id is required');
  const rec = ctx.state.findSandbox(id);
  if (!rec) throw new StatusError(status.NOT_FOUND, `pod sandbox ${id} does not exist`);
  return rec;
}
