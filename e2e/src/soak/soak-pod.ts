/**
 * One pod of the soak from its creation to the moment before its deletion: its follower, the
 * liveness failure made on purpose, and at retirement the end of its printing, the capture of its
 * log files and the checks on them, on its restarts and on the runtime's view of it.
 *
 *   class SoakPod {
 *     constructor(ctx, plan)
 *     prepare()           its /ctl directory, before the pod is created
 *     manifest()
 *     created()           starts what runs beside it: the follower, the liveness failure
 *     retire()            stops its printing, waits for the end marker in its file, captures and checks
 *     followerEnds()
 *   }
 */
import { mkdir, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { V1Pod } from '@kubernetes/client-node';
import { progress, sleep } from './clock.js';
import type { SoakContext } from './context.js';
import { LogFollower, type FollowerEnd } from './followers.js';
import { podLogDir, readInstances, tallyLines, type InstanceLog } from './log-files.js';
import { containerName, podManifest, type PodPlan } from './manifests.js';
import { containers, sandboxes } from './runtime-view.js';

const POLL_MS = 2000;

const isReady = (pod: V1Pod) => pod.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True') ?? false;
const appStatus = (pod: V1Pod) => pod.status?.containerStatuses?.find((s) => s.name === containerName);

export class SoakPod {
  private follower: LogFollower | undefined;
  private failure: Promise<boolean> = Promise.resolve(false);

  constructor(
    private readonly ctx: SoakContext,
    readonly plan: PodPlan,
  ) {}

  private get ctl(): string {
    return join(this.ctx.ctlDir, this.plan.name);
  }

  async prepare(): Promise<void> {
    await mkdir(this.ctl, { recursive: true });
  }

  manifest(): V1Pod {
    return podManifest(this.plan, this.ctx.image, this.ctx.node.nodeName, this.ctx.ctlDir);
  }

  /** The Pod object, or undefined while the API server does not answer or the pod is gone. */
  private async get(): Promise<V1Pod | undefined> {
    try {
      return await this.ctx.node.pod(this.plan.name);
    } catch {
      return undefined;
    }
  }

  private async waitFor(test: (pod: V1Pod) => boolean, timeoutMs: number): Promise<V1Pod | undefined> {
    const deadline = Date.now() + timeoutMs;
    while (Date.now() < deadline) {
      const pod = await this.get();
      if (pod !== undefined && test(pod)) return pod;
      await sleep(POLL_MS);
    }
    return undefined;
  }

  created(): void {
    if (this.plan.followed) {
      this.follower = new LogFollower(this.ctx, this.plan.name);
      void this.waitFor((p) => appStatus(p)?.state?.running !== undefined, 120_000).then(() => this.follower!.start());
    }
    if (this.plan.failing) this.failure = this.failLiveness();
  }

  /** Once the container is up and probed, its liveness file goes: the kubelet must restart it, once. */
  private async failLiveness(): Promise<boolean> {
    const pod = await this.waitFor((p) => isReady(p) && appStatus(p)?.restartCount === 0, 120_000);
    if (pod === undefined) return false;
    await rm(join(this.ctl, 'live'), { force: true });
    progress(`${this.plan.name}: liveness file removed`);
    return true;
  }

  private async readLogs(uid: string): Promise<InstanceLog[]> {
    return readInstances(join(podLogDir(this.ctx.node, 'default', this.plan.name, uid), containerName));
  }

  followerEnds(): FollowerEnd[] {
    return this.follower?.ends ?? [];
  }

  async retire(): Promise<void> {
    const { report } = this.ctx;
    const name = this.plan.name;
    const failed = await this.failure;
    if (this.plan.failing && !failed) report.problem('other', 1, `${name} never became ready with no restart, so its liveness probe was not failed`);
    if (failed && (await this.waitFor((p) => (appStatus(p)?.restartCount ?? 0) >= 1, 90_000)) === undefined) {
      report.problem('other', 1, `${name}: its liveness file was removed but the kubelet did not restart the container within 90 s`);
    }
    await writeFile(join(this.ctl, 'stop'), '');
    const first = await this.waitFor(() => true, 60_000);
    const uid = first?.metadata?.uid;
    if (first === undefined || uid === undefined) {
      report.problem('other', 1, `${name}: the API server has no such pod`);
      await this.follower?.stop(0);
      return;
    }
    // The end marker in the newest instance's file: every line it printed has been written by then.
    const deadline = Date.now() + 120_000;
    let logs: InstanceLog[] = [];
    while (Date.now() < deadline) {
      logs = await this.readLogs(uid);
      const last = logs.at(-1);
      if (last !== undefined && tallyLines(name, last.lines).end !== undefined) break;
      await sleep(500);
    }
    logs = await this.readLogs(uid);
    const pod = (await this.get()) ?? first;
    const status = appStatus(pod);
    const restarts = status?.restartCount ?? 0;
    await this.follower?.stop(120_000);

    // A container the kubelet never started (a node too busy to start a wave within its life) printed
    // nothing, so lost nothing: that is a problem of another kind.
    const ran = restarts > 0 || status?.state?.running !== undefined || Boolean(status?.state?.terminated?.startedAt);
    if (logs.length === 0) report.problem(ran ? 'lost' : 'other', 1, `${name}: no log file at all (container ${JSON.stringify(status?.state)})`);
    let printed0 = 0;
    for (const [i, log] of logs.entries()) {
      const tally = tallyLines(name, log.lines);
      report.lines += tally.printed;
      if (i === 0) printed0 = tally.printed;
      const where = `${name} instance ${log.instance} (${log.files.join(', ')})`;
      report.problem('lost', tally.lost, `${where}: ${tally.lost} of ${tally.printed} lines missing, the first ${tally.firstGap}`);
      report.problem('duplicated', tally.duplicated, `${where}: ${tally.duplicated} lines again or out of order`);
      report.problem('other', tally.foreign + log.malformed, `${where}: ${tally.foreign} lines not of the pod's form${tally.firstForeign === undefined ? '' : ` (the first: ${JSON.stringify(tally.firstForeign.slice(0, 200))})`}, ${log.malformed} records not CRI records`);
      if (i === logs.length - 1 && tally.end === undefined) {
        report.problem(ran ? 'lost' : 'other', 1, `${where}: its end marker never reached the file in 120 s (last line ${tally.printed - 1}; container ${JSON.stringify(status?.state)})`);
      }
    }

    const expected = failed ? 1 : 0;
    const instances = Math.max(restarts, logs.length - 1);
    report.problem('spurious', instances - expected, `${name}: restarted ${restarts} times (${logs.length} log files), ${expected} expected; its last end ${JSON.stringify(status?.lastState?.terminated ?? status?.lastState)}`);

    // The kubelet's status reaches the API server some seconds after the runtime's state changed,
    // more so after a kubelet restart: they are compared until they agree, for a minute.
    let disagreement = '';
    let recreated = 0;
    let sandboxCount = '';
    const agreeBy = Date.now() + 60_000;
    for (;;) {
      const now = appStatus((await this.get()) ?? pod);
      const ownSandboxes = await sandboxes(this.ctx, uid);
      for (const s of ownSandboxes) this.ctx.sandboxIds.add(s.id);
      recreated = ownSandboxes.length - 1 + ownSandboxes.reduce((sum, s) => sum + (s.metadata?.attempt ?? 0), 0);
      sandboxCount = `${ownSandboxes.length} sandboxes for it, attempts ${ownSandboxes.map((s) => s.metadata?.attempt).join(',')}`;
      const ready = ownSandboxes.find((s) => s.state === 'SANDBOX_READY');
      const apiId = now?.containerID?.replace(/^[a-z]+:\/\//, '');
      const running = ready === undefined ? [] : (await containers(this.ctx, ready.id)).filter((c) => c.state === 'CONTAINER_RUNNING');
      disagreement =
        ready === undefined || running.length !== 1 || running[0]!.id !== apiId || now?.state?.running === undefined
          ? `the kubelet reports container ${apiId} (${JSON.stringify(now?.state)}), the runtime's ready sandbox ${ready?.id} runs ${running.map((c) => c.id).join(',') || 'nothing'}`
          : '';
      if (disagreement === '' || Date.now() > agreeBy) break;
      await sleep(POLL_MS);
    }
    report.problem('spurious', recreated, `${name}: the runtime has ${sandboxCount}`);
    report.problem('other', disagreement ? 1 : 0, `${name}, for a minute: ${disagreement}`);

    if (this.follower !== undefined && this.follower.starts === 0) {
      report.note(`${name}: its follower never started (the container was not reported running before the pod was retired)`);
    } else if (this.follower !== undefined && logs.length === 1) {
      const missed: number[] = [];
      for (let n = 0; n < printed0; n++) if (!this.follower.seen.has(n)) missed.push(n);
      const endMissed = this.follower.end === undefined ? 1 : 0;
      report.problem('lost', missed.length + endMissed, `${name}: its followers (${this.follower.starts} kubectl logs -f) missed ${missed.length} of ${printed0} lines${missed.length ? ` (the first ${missed[0]}, the last ${missed.at(-1)})` : ''}${endMissed ? ' and the end marker' : ''}`);
    }
  }
}
