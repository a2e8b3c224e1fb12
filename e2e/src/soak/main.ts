/**
 * The chaos soak: a Skiff instance and a one-node Kubernetes on it; pods made and deleted in waves
 * through the API server while a Skiff daemon or the kubelet is SIGKILLed every few seconds; log
 * followers, an exec and a port-forward session kept open throughout; then every pod deleted and
 * the checks (every line once and in order, no spurious restart, nothing left behind). Prints the
 * problems, then one line:
 *
 *   soak: N kills, N pods, N lines, N lost, N duplicated, N spurious restarts, N leaked
 *
 * and exits 0 only when no problem was found. Run through scripts/soak.sh (options: its --help).
 */
import { copyFile, mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { V1Pod } from '@kubernetes/client-node';
import { startKubeNode, type KubeNode } from '../lib/kube-node.js';
import { startRuntimeHarness, waitUntilRuntimeServiceAnswers, type RuntimeHarness } from '../lib/runtime-harness.js';
import { makeTempDir, removeDir } from '../lib/tmp.js';
import { kubeletRestartsAgain, runChaos } from './chaos.js';
import { checkAgreement, checkFds, checkNothingLeft, countFds } from './checks.js';
import { pollFor, progress, sleep } from './clock.js';
import type { SoakContext } from './context.js';
import { DAEMONS, KillLog } from './kills.js';
import { containerName, type PodPlan } from './manifests.js';
import { parseOptions, USAGE, UsageError, type SoakOptions } from './options.js';
import { Report } from './report.js';
import { runExecSession, runPortForwardSession, type SessionStats } from './sessions.js';
import { createWave, followerEnds, retireWave } from './waves.js';
import { runWaves } from './waves.js';

const KEEP_ROOT = '/var/tmp/skiff-soak';
const ANCHOR: PodPlan = { name: 'soak-anchor', wave: -1, failing: false, followed: true, linesPerSecond: 5 };

function options(): SoakOptions {
  const argv = process.argv.slice(2);
  if (argv.includes('--help') || argv.includes('-h')) {
    process.stdout.write(`${USAGE}\n`);
    process.exit(0);
  }
  try {
    return parseOptions(argv);
  } catch (err) {
    if (!(err instanceof UsageError)) throw err;
    process.stderr.write(`soak: ${err.message}\n${USAGE}\n`);
    process.exit(2);
  }
}

const isReady = (pod: V1Pod) => pod.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True') ?? false;

/** exec'd processes still in the pod once every session ended: a session's `cat` left behind. */
async function strayExecs(ctx: SoakContext): Promise<string[]> {
  const { stdout } = await ctx.node.kubectl(['exec', ANCHOR.name, '-c', containerName, '--', 'ps']);
  return stdout.split('\n').filter((line) => line.trim().split(/\s+/).at(-1) === 'cat');
}

async function everythingUp(ctx: SoakContext): Promise<void> {
  await pollFor('the node to be Ready', 180_000, 2000, async () => ((await ctx.node.nodeReady()) ? true : undefined));
  for (const d of DAEMONS) await pollFor(`${d} to run`, 60_000, 500, async () => ctx.h.skiff.servicePid(d));
  await waitUntilRuntimeServiceAnswers(ctx.h.skiff.runtimeSocket, 60_000);
}

function noteSessions(ctx: SoakContext, stats: readonly SessionStats[]): void {
  for (const s of stats) ctx.report.note(`${s.name} session: ${s.checks} checks passed, ${s.ends} ends (${s.explainedEnds} at a stream-svc or kubelet kill)`);
}

async function soak(ctx: SoakContext, interrupted: AbortSignal): Promise<void> {
  const { report, options: o } = ctx;
  const fresh = await countFds(ctx);
  const anchor = await createWave(ctx, [ANCHOR]);
  if (anchor.length === 0) throw new Error(`${ANCHOR.name} could not be created`);
  await pollFor('the anchor pod to be ready', 180_000, 2000, async () => (isReady(await ctx.node.pod(ANCHOR.name)) ? true : undefined));
  const sessionsEnd = new AbortController();
  interrupted.addEventListener('abort', () => sessionsEnd.abort(), { once: true });
  const sessions = Promise.all([runExecSession(ctx, ANCHOR.name, sessionsEnd.signal), runPortForwardSession(ctx, ANCHOR.name, sessionsEnd.signal)]);
  const chaosEnd = new AbortController();
  interrupted.addEventListener('abort', () => chaosEnd.abort(), { once: true });
  const chaos = runChaos(ctx, chaosEnd.signal);

  const waves = await runWaves(ctx, interrupted);
  // The last wave gets its window of kills too.
  await sleep(o.waveSeconds * 1000, interrupted);
  chaosEnd.abort();
  await chaos;
  progress(`chaos over after ${ctx.kills.kills.length} kills; waiting for the retired waves`);
  await Promise.all(waves.retirements);
  if (interrupted.aborted) return;

  await everythingUp(ctx);
  await checkAgreement(ctx);
  await retireWave(ctx, waves.last);
  sessionsEnd.abort();
  noteSessions(ctx, await sessions);
  const stray = await pollFor('no exec\'d process left in the anchor pod', 30_000, 2000, async () => {
    const left = await strayExecs(ctx);
    return left.length === 0 ? left : undefined;
  }).catch(() => strayExecs(ctx));
  report.problem('leaked', stray.length, `processes of ended exec sessions still in ${ANCHOR.name}: ${stray.join(' | ')}`);
  await retireWave(ctx, anchor);

  const ends = followerEnds([...waves.all, ...anchor]);
  const unexplained = ends.filter((e) => !e.explained);
  report.note(`log followers: ${ends.length} ended while their pod ran (${ends.length - unexplained.length} at a stream-svc or kubelet kill)${unexplained.length ? `; others: ${[...new Set(unexplained.map((e) => e.stderr))].slice(0, 3).join(' | ')}` : ''}`);
  const byTarget = new Map<string, number>();
  for (const k of ctx.kills.kills) byTarget.set(k.target, (byTarget.get(k.target) ?? 0) + 1);
  report.note(`kills: ${[...byTarget.entries()].map(([t, n]) => `${t} ${n}`).join(', ')}; kubelets started again after ending at their start: ${kubeletRestartsAgain()}`);

  progress('every pod deleted; checking that nothing is left');
  await checkNothingLeft(ctx);
  await checkFds(ctx, fresh);
}

/** The kubelet's, the API server's and Skiff's logs, kept for a soak that found something. */
async function keepLogs(report: Report, h: RuntimeHarness | undefined, node: KubeNode | undefined): Promise<void> {
  const dir = join(KEEP_ROOT, new Date().toISOString().replace(/[:.]/g, '-'));
  try {
    await mkdir(dir, { recursive: true });
    const files: [string, string][] = [];
    if (node !== undefined) for (const name of ['kubelet', 'kube-apiserver', 'etcd']) files.push([join(node.dir, 'logs', `${name}.log`), `${name}.log`]);
    for (const [from, to] of files) await copyFile(from, join(dir, to)).catch(() => undefined);
    // `skiff up` in the foreground prints its daemons' logs rather than writing log_file.
    if (h !== undefined) await writeFile(join(dir, 'skiff.log'), h.skiff.output());
    report.note(`logs kept in ${dir}`);
  } catch (err) {
    report.note(`the logs could not be kept: ${(err as Error).message}`);
  }
}

async function main(): Promise<void> {
  const o = options();
  const report = new Report();
  const interrupted = new AbortController();
  for (const signal of ['SIGINT', 'SIGTERM'] as const) {
    process.once(signal, () => {
      report.problem('other', 1, `interrupted by ${signal}`);
      interrupted.abort();
    });
  }
  const ctlDir = await makeTempDir('skiff-soak');
  let h: RuntimeHarness | undefined;
  let node: KubeNode | undefined;
  const t0 = Date.now();
  try {
    progress(`starting Skiff and a node: ${JSON.stringify(o)}`);
    h = await startRuntimeHarness({ images: ['busybox'] });
    node = await startKubeNode(h.skiff);
    const ctx: SoakContext = { h, node, image: h.imageRef('busybox'), options: o, report, kills: new KillLog(), ctlDir, sandboxIds: new Set() };
    await soak(ctx, interrupted.signal);
    report.kills = ctx.kills.kills.length;
  } catch (err) {
    report.problem('other', 1, `the soak stopped: ${(err as Error).stack ?? String(err)}`);
  } finally {
    if (!report.ok()) await keepLogs(report, h, node);
    progress('cleaning up');
    for (const step of [() => node?.stop(), () => h?.stop(), () => node?.removeCgroupRoot(), () => removeDir(ctlDir)]) {
      try {
        await step();
      } catch (err) {
        report.problem('other', 1, `cleaning up: ${(err as Error).message}`);
      }
    }
  }
  report.note(`${Math.round((Date.now() - t0) / 1000)} s in all`);
  report.print();
  // A follower's or session's child that is slow to close must not keep the soak running.
  process.exit(report.ok() ? 0 : 1);
}

await main();
