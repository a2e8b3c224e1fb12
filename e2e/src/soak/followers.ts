/**
 * `kubectl logs -f --timestamps` on one pod's container for as long as the soak wants it: a follower
 * that ends (the kubelet killed, or the kubelet ending the stream) is started again with
 * `--since-time` at the last line it saw, so that the followers of a pod together see every line.
 *
 *   class LogFollower {
 *     constructor(ctx, pod)
 *     start()                      runs until stop()
 *     seen: Set<number>            the numbered lines seen, all followers together
 *     end: number | undefined      the end marker's count, once seen
 *     ends: FollowerEnd[]          each end of a follower that had run, and whether a kill explains it
 *     stop(waitForEndMs)           waits (up to waitForEndMs) for the end marker, then ends its kubectl
 *   }
 */
import type { ChildProcess } from 'node:child_process';
import { sleep } from './clock.js';
import type { SoakContext } from './context.js';
import { STREAM_CARRIERS } from './kills.js';
import { containerName } from './manifests.js';

export interface FollowerEnd {
  at: number;
  /** The kill of the kubelet or stream-svc just before it, if any. */
  explained: boolean;
  stderr: string;
}

const MAX_STARTS = 200;

export class LogFollower {
  readonly seen = new Set<number>();
  end: number | undefined;
  readonly ends: FollowerEnd[] = [];
  starts = 0;
  private lastTime: string | undefined;
  private child: ChildProcess | undefined;
  private readonly stopping = new AbortController();
  private loop: Promise<void> | undefined;

  constructor(
    private readonly ctx: SoakContext,
    readonly pod: string,
  ) {}

  start(): void {
    this.loop ??= this.run();
  }

  private async run(): Promise<void> {
    const numbered = new RegExp(`^(\\S+) ${this.pod} (\\d+)$`);
    const ended = new RegExp(`^(\\S+) ${this.pod} end (\\d+)$`);
    while (!this.stopping.signal.aborted && this.starts < MAX_STARTS) {
      this.starts++;
      const args = ['logs', '-f', '--timestamps', this.pod, '-c', containerName];
      // --since-time is sent with a second's precision: the lines of that second come again.
      if (this.lastTime !== undefined) args.push(`--since-time=${this.lastTime}`);
      const child = this.ctx.node.spawnKubectl(args);
      this.child = child;
      let pending = '';
      let stderr = '';
      let lines = 0;
      child.stdout!.on('data', (chunk: Buffer) => {
        pending += chunk.toString('utf8');
        const parts = pending.split('\n');
        pending = parts.pop() ?? '';
        for (const line of parts) {
          const m = numbered.exec(line);
          const e = m ? undefined : ended.exec(line);
          if (m) this.seen.add(Number(m[2]));
          if (e) this.end = Number(e[2]);
          const time = (m ?? e)?.[1];
          if (time !== undefined) {
            this.lastTime = time;
            lines++;
          }
        }
      });
      child.stderr!.on('data', (chunk: Buffer) => (stderr = (stderr + chunk.toString('utf8')).slice(-2000)));
      child.stdin!.end();
      await new Promise<void>((resolve) => child.once('close', () => resolve()));
      this.child = undefined;
      if (this.stopping.signal.aborted) break;
      if (lines > 0) {
        const at = Date.now();
        this.ends.push({ at, explained: this.ctx.kills.recent(at, 30_000, STREAM_CARRIERS).length > 0, stderr: stderr.trim() });
      }
      await sleep(1000, this.stopping.signal);
    }
  }

  async stop(waitForEndMs: number): Promise<void> {
    const deadline = Date.now() + waitForEndMs;
    while (this.end === undefined && Date.now() < deadline && this.loop !== undefined) await sleep(250);
    this.stopping.abort();
    this.child?.kill('SIGTERM');
    await this.loop;
  }
}
