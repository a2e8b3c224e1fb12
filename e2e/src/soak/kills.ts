/**
 * The record of every kill the chaos loop made, so that an ended session or follower can be told
 * apart: ended by the kill of stream-svc or the kubelet (expected) or by anything else (a defect).
 *
 *   DAEMONS                        the Skiff daemons the chaos loop kills
 *   class KillLog {
 *     record(target, pid): Kill
 *     recent(at, windowMs, targets?): Kill[]    kills in [at - windowMs, at]
 *     describe(at): string                      the last kills before `at`, for a problem's detail
 *   }
 */
import { since } from './clock.js';

export const DAEMONS = ['image-svc', 'runtime-svc', 'stream-svc', 'logs-svc'] as const;
export type Daemon = (typeof DAEMONS)[number];
export type KillTarget = Daemon | 'kubelet';

/** The targets whose kill may end an exec, attach, port-forward or logs stream. */
export const STREAM_CARRIERS: readonly KillTarget[] = ['stream-svc', 'kubelet'];

export interface Kill {
  n: number;
  at: number;
  target: KillTarget;
  pid: number;
}

export class KillLog {
  readonly kills: Kill[] = [];

  record(target: KillTarget, pid: number): Kill {
    const kill = { n: this.kills.length + 1, at: Date.now(), target, pid };
    this.kills.push(kill);
    return kill;
  }

  recent(at: number, windowMs: number, targets?: readonly KillTarget[]): Kill[] {
    return this.kills.filter((k) => k.at <= at && k.at >= at - windowMs && (targets === undefined || targets.includes(k.target)));
  }

  describe(at: number): string {
    const last = this.kills.filter((k) => k.at <= at).slice(-3);
    if (last.length === 0) return 'no kill before it';
    return `last kills: ${last.map((k) => `#${k.n} ${k.target} (pid ${k.pid}) at ${since(undefined, k.at)}`).join(', ')}`;
  }
}
