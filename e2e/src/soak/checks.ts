/**
 * The soak's checks once the chaos has stopped: the kubelet's pods against the runtime's, and
 * after every pod was deleted, that nothing is left (pods, sandboxes, containers, conmon monitors,
 * runc state, network namespaces, mounts, cgroups) and that no daemon holds more file descriptors
 * than a fresh one.
 *
 *   checkAgreement(ctx): Promise<void>
 *   checkNothingLeft(ctx): Promise<void>
 *   countFds(ctx): Promise<Record<Daemon, number>>
 *   checkFds(ctx, fresh): Promise<void>
 *   FD_ALLOWANCE
 */
import { readdir } from 'node:fs/promises';
import { join } from 'node:path';
import type { V1Pod } from '@kubernetes/client-node';
import { mountsUnder } from '../lib/runtime-inventory.js';
import { sleep } from './clock.js';
import type { SoakContext } from './context.js';
import { DAEMONS, type Daemon } from './kills.js';
import { containers, sandboxes } from './runtime-view.js';

/**
 * Descriptors a daemon may hold beyond its count when it was fresh with no pod: connections opened
 * on first use (to another daemon's socket, a metrics scrape, a kubelet channel reconnecting while
 * its old one closes) that a fresh daemon did not have yet. A descriptor left per pod or per
 * stream would pass it within a wave.
 */
export const FD_ALLOWANCE = 8;

async function apiPods(ctx: SoakContext): Promise<V1Pod[]> {
  const { stdout } = await ctx.node.kubectl(['get', 'pods', '-n', 'default', '-o', 'json']);
  return (JSON.parse(stdout) as { items: V1Pod[] }).items;
}

async function poll<T>(timeoutMs: number, attempt: () => Promise<T>, done: (value: T) => boolean): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await attempt();
    if (done(value) || Date.now() > deadline) return value;
    await sleep(2000);
  }
}

export async function checkAgreement(ctx: SoakContext): Promise<void> {
  interface Disagreement {
    missing: string[];
    unknown: string[];
  }
  const compare = async (): Promise<Disagreement> => {
    const pods = await apiPods(ctx);
    const all = await sandboxes(ctx);
    for (const s of all) ctx.sandboxIds.add(s.id);
    const ready = all.filter((s) => s.state === 'SANDBOX_READY');
    const readyUids = new Set(ready.map((s) => s.labels['io.kubernetes.pod.uid']));
    const known = new Set(pods.map((p) => p.metadata?.uid));
    const missing = pods.filter((p) => p.metadata?.deletionTimestamp === undefined && p.status?.phase === 'Running' && !readyUids.has(p.metadata?.uid ?? '')).map((p) => p.metadata!.name!);
    const unknown = ready.filter((s) => !known.has(s.labels['io.kubernetes.pod.uid'])).map((s) => `${s.metadata?.name} (${s.id})`);
    return { missing, unknown };
  };
  const result = await poll(60_000, compare, (d) => d.missing.length === 0 && d.unknown.length === 0);
  ctx.report.problem('other', result.missing.length, `running by the API server, with no ready sandbox in the runtime: ${result.missing.join(', ')}`);
  ctx.report.problem('leaked', result.unknown.length, `ready sandboxes of no Pod object: ${result.unknown.join(', ')}`);
}

async function kubeletCgroups(ctx: SoakContext): Promise<string[]> {
  const left: string[] = [];
  const walk = async (dir: string, depth: number): Promise<void> => {
    const entries = await readdir(dir, { withFileTypes: true }).catch(() => []);
    for (const e of entries) {
      if (!e.isDirectory()) continue;
      const path = join(dir, e.name);
      // Below kubepods only the QoS classes' own cgroups stay; a pod's or a container's is a leftover.
      if (depth === 0 && (e.name === 'burstable' || e.name === 'besteffort')) await walk(path, 1);
      else if (/^pod|^[0-9a-f]{64}$/.test(e.name)) left.push(path);
    }
  };
  for (const hierarchy of await readdir('/sys/fs/cgroup').catch(() => [] as string[])) {
    await walk(join('/sys/fs/cgroup', hierarchy, ctx.node.cgroupRoot, 'kubepods'), 0);
  }
  return left;
}

export async function checkNothingLeft(ctx: SoakContext): Promise<void> {
  const { report, h, node } = ctx;
  const pods = await poll(240_000, () => apiPods(ctx), (p) => p.length === 0);
  report.problem('leaked', pods.length, `Pod objects still there 240 s after their deletion: ${pods.map((p) => `${p.metadata?.name} (${p.status?.phase})`).join(', ')}`);

  // The kubelet removes a deleted pod's sandbox at once and its exited containers at its next
  // garbage collection, once a minute.
  const listed = await poll(300_000, async () => ({ pods: await sandboxes(ctx), containers: await containers(ctx) }), (l) => l.pods.length + l.containers.length === 0);
  report.problem('leaked', listed.pods.length, `pod sandboxes the runtime still lists: ${listed.pods.map((s) => `${s.metadata?.name} ${s.id} ${s.state}`).join(', ')}`);
  report.problem('leaked', listed.containers.length, `containers the runtime still lists: ${listed.containers.map((c) => `${c.metadata?.name} ${c.id} ${c.state}`).join(', ')}`);

  const inventory = await h.settledInventory(60_000);
  const parts: [string, readonly unknown[]][] = [
    ['conmon monitors', inventory.monitors.map((m) => `${m.pid} (${m.id})`)],
    ['runc state', inventory.runc],
    ['network namespaces', inventory.netns],
    ['mounts under the instance', inventory.mounts],
    ['cgroups under the runtime parent', inventory.cgroups],
    ['sandbox directories', inventory.sandboxDirs],
    ['container directories', inventory.containerDirs],
    ['CNI results', inventory.cniResults],
    // host-local's directory and the nat table are shared with other instances: only our sandboxes' count.
    ['addresses held', Object.entries(inventory.ipOwners).filter(([, id]) => ctx.sandboxIds.has(id)).map(([ip, id]) => `${ip} (${id})`)],
    ['nat rules', inventory.natRuleOwners.filter((id) => ctx.sandboxIds.has(id))],
  ];
  for (const [what, items] of parts) report.problem('leaked', items.length, `${what}: ${items.join(', ')}`);

  const nodeMounts = await poll(60_000, () => mountsUnder(join(node.kubeletRoot, 'pods')), (m) => m.length === 0);
  report.problem('leaked', nodeMounts.length, `mounts under the kubelet's pods directory: ${nodeMounts.join(', ')}`);
  const cgroups = await poll(120_000, () => kubeletCgroups(ctx), (c) => c.length === 0);
  report.problem('leaked', cgroups.length, `cgroups under the kubelet's root ${node.cgroupRoot}: ${cgroups.join(', ')}`);
}

async function fdsOf(pid: number): Promise<number> {
  return (await readdir(`/proc/${pid}/fd`)).length;
}

export async function countFds(ctx: SoakContext): Promise<Record<Daemon, number>> {
  const out = {} as Record<Daemon, number>;
  for (const daemon of DAEMONS) {
    const pid = await ctx.h.skiff.servicePid(daemon);
    if (pid === undefined) throw new Error(`${daemon} has no pid file`);
    out[daemon] = await fdsOf(pid);
  }
  return out;
}

export async function checkFds(ctx: SoakContext, fresh: Record<Daemon, number>): Promise<void> {
  // Closing is asynchronous in places (a stream's socket, a follower's file): some seconds to settle.
  const now = await poll(30_000, () => countFds(ctx), (c) => DAEMONS.every((d) => c[d] <= fresh[d] + FD_ALLOWANCE));
  ctx.report.note(`file descriptors, fresh with no pod → at the end: ${DAEMONS.map((d) => `${d} ${fresh[d]} → ${now[d]}`).join(', ')} (allowance ${FD_ALLOWANCE})`);
  for (const d of DAEMONS) {
    const pid = await ctx.h.skiff.servicePid(d);
    ctx.report.problem('leaked', now[d] - fresh[d] - FD_ALLOWANCE > 0 ? now[d] - fresh[d] : 0, `${d} (pid ${pid}) holds ${now[d]} file descriptors, a fresh one ${fresh[d]}`);
  }
}
