/**
 * The chaos loop: every kill-min..kill-max seconds it SIGKILLs a random Skiff daemon (its pid from
 * the instance's pid file; `skiff up` starts it again) and, every K-th time, the kubelet (then
 * started again through scripts/kube-node.sh, as its supervisor would). Each kill waits for its
 * target to be back (runtime-svc and image-svc answering) before the next is drawn. It stops at
 * the signal.
 *
 *   runChaos(ctx, signal): Promise<void>
 *   kubeletRestartsAgain(): number      kubelets that ended at their start and were started again
 */
import { waitUntilRuntimeServiceAnswers } from '../lib/runtime-harness.js';
import { progress, sleep } from './clock.js';
import type { SoakContext } from './context.js';
import { DAEMONS } from './kills.js';

function draw(min: number, max: number): number {
  return min + Math.random() * (max - min);
}

let kubeletFailedStarts = 0;

/** Kubelets that ended at their start and were started again. */
export function kubeletRestartsAgain(): number {
  return kubeletFailedStarts;
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

async function killKubelet(ctx: SoakContext): Promise<void> {
  const pid = await ctx.node.kubeletPid();
  if (pid !== undefined && alive(pid)) {
    ctx.kills.record('kubelet', pid);
    process.kill(pid, 'SIGKILL');
    progress(`kill #${ctx.kills.kills.length}: kubelet (pid ${pid})`);
  } else {
    ctx.report.problem('other', 1, `the kubelet (pid ${pid}) had ended by itself before its kill; see its log`);
  }
  // restart-kubelet finds the pid gone, starts a new kubelet and waits until the node is Ready,
  // which the node still is by its last heartbeat: a kubelet that gave up at its start (the
  // runtime not answering yet) is only seen by its pid, and started again as its supervisor would.
  for (let start = 1; ; start++) {
    await ctx.node.restartKubelet();
    await sleep(5000);
    const now = await ctx.node.kubeletPid();
    if (now !== undefined && alive(now)) return;
    if (start === 5) throw new Error(`the kubelet ended at each of ${start} starts; see its log`);
    kubeletFailedStarts++;
  }
}

async function killDaemon(ctx: SoakContext): Promise<void> {
  const daemon = DAEMONS[Math.floor(Math.random() * DAEMONS.length)]!;
  const pid = await ctx.h.skiff.servicePid(daemon);
  if (pid === undefined || !alive(pid)) {
    ctx.report.problem('other', 1, `${daemon} (pid ${pid}) had ended by itself before its kill; see Skiff's log`);
    await sleep(5000);
    return;
  }
  ctx.kills.record(daemon, pid);
  process.kill(pid, 'SIGKILL');
  progress(`kill #${ctx.kills.kills.length}: ${daemon} (pid ${pid})`);
  await ctx.h.skiff.waitForNewPid(daemon, pid, 60_000);
  // Back means answering, as the kubelet needs it: a kubelet started meanwhile would give up.
  if (daemon === 'runtime-svc') await waitUntilRuntimeServiceAnswers(ctx.h.skiff.runtimeSocket, 60_000);
  if (daemon === 'image-svc') await ctx.h.skiff.waitUntilImageServiceAnswers(60_000);
}

export async function runChaos(ctx: SoakContext, signal: AbortSignal): Promise<void> {
  const { killMin, killMax, kubeletKillEvery, minutes } = ctx.options;
  const bound = Math.ceil((minutes * 60) / killMin) + 1;
  for (let n = 1; n <= bound; n++) {
    await sleep(draw(killMin, killMax) * 1000, signal);
    if (signal.aborted) return;
    try {
      if (n % kubeletKillEvery === 0) await killKubelet(ctx);
      else await killDaemon(ctx);
    } catch (err) {
      ctx.report.problem('other', 1, `kill attempt ${n} did not come back: ${(err as Error).message.slice(0, 2000)}`);
    }
    ctx.report.kills = ctx.kills.kills.length;
  }
}
