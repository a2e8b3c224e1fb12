/**
 * Pods made and deleted in waves through the API server: a new wave every S seconds, each wave
 * retired (its printing stopped, its log files captured and checked) and deleted when the next is
 * made, so that pods start in every kill window. One pod of each wave has its liveness probe failed
 * on purpose; two are followed with `kubectl logs -f`.
 *
 *   createWave(ctx, plans): Promise<SoakPod[]>
 *   retireWave(ctx, pods): Promise<void>      checks every pod, then deletes them in one call
 *   runWaves(ctx, signal): Promise<WaveRun>   until the signal or the last wave
 *   interface WaveRun { last: SoakPod[]; retirements: Promise<void>[]; followerEnds }
 */
import { progress, sleep } from './clock.js';
import type { SoakContext } from './context.js';
import type { FollowerEnd } from './followers.js';
import type { PodPlan } from './manifests.js';
import { SoakPod } from './soak-pod.js';

export interface WaveRun {
  last: SoakPod[];
  retirements: Promise<void>[];
  all: SoakPod[];
}

const FOLLOWED_PER_WAVE = 2;

export function wavePlans(ctx: SoakContext, wave: number): PodPlan[] {
  return Array.from({ length: ctx.options.waveSize }, (_, i) => ({
    name: `soak-w${wave}-${i}`,
    wave,
    failing: i === 0,
    followed: i >= 1 && i <= FOLLOWED_PER_WAVE,
    linesPerSecond: ctx.options.linesPerSecond,
  }));
}

async function kubectlRetried(ctx: SoakContext, what: string, args: string[], input?: string): Promise<boolean> {
  let last = '';
  for (let attempt = 0; attempt < 5; attempt++) {
    try {
      await ctx.node.kubectl(args, input === undefined ? { timeoutMs: 120_000 } : { input, timeoutMs: 120_000 });
      return true;
    } catch (err) {
      last = (err as Error).message;
      await sleep(3000);
    }
  }
  ctx.report.problem('other', 1, `${what} failed five times: ${last.slice(0, 1000)}`);
  return false;
}

export async function createWave(ctx: SoakContext, plans: readonly PodPlan[]): Promise<SoakPod[]> {
  const pods = plans.map((plan) => new SoakPod(ctx, plan));
  for (const pod of pods) await pod.prepare();
  const list = { apiVersion: 'v1', kind: 'List', items: pods.map((p) => p.manifest()) };
  if (!(await kubectlRetried(ctx, `creating ${plans.map((p) => p.name).join(' ')}`, ['apply', '-f', '-'], JSON.stringify(list)))) return [];
  ctx.report.pods += pods.length;
  for (const pod of pods) pod.created();
  return pods;
}

export async function retireWave(ctx: SoakContext, pods: readonly SoakPod[]): Promise<void> {
  if (pods.length === 0) return;
  await Promise.all(
    pods.map((p) =>
      p.retire().catch((err: unknown) => ctx.report.problem('other', 1, `checking ${p.plan.name} failed: ${(err as Error).stack ?? String(err)}`)),
    ),
  );
  await kubectlRetried(ctx, 'deleting a wave', ['delete', 'pod', '--wait=false', '--ignore-not-found', ...pods.map((p) => p.plan.name)]);
  progress(`deleted ${pods.map((p) => p.plan.name).join(' ')}`);
}

export async function runWaves(ctx: SoakContext, signal: AbortSignal): Promise<WaveRun> {
  const { minutes, waveSeconds } = ctx.options;
  const waves = Math.max(1, Math.floor((minutes * 60) / waveSeconds));
  const t0 = Date.now();
  const run: WaveRun = { last: [], retirements: [], all: [] };
  for (let wave = 0; wave < waves && !signal.aborted; wave++) {
    await sleep(t0 + wave * waveSeconds * 1000 - Date.now(), signal);
    if (signal.aborted) break;
    const previous = run.last;
    run.last = await createWave(ctx, wavePlans(ctx, wave));
    run.all.push(...run.last);
    progress(`wave ${wave} of ${waves}: ${run.last.length} pods created`);
    run.retirements.push(retireWave(ctx, previous));
  }
  return run;
}

export function followerEnds(pods: readonly SoakPod[]): FollowerEnd[] {
  return pods.flatMap((p) => p.followerEnds());
}
