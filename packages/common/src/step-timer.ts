import type { Logger } from './logger.js';

/**
 * Where one operation's time goes: named steps with their durations in ms, logged once at debug
 * level when the operation ends (`{ op, ms, steps: { name: ms, ... }, ...fields }`, "steps").
 * Sequential steps are marked as they end; steps that run at the same time are timed each on its own.
 * With debug off nothing is recorded.
 */
export class StepTimer {
  private readonly enabled: boolean;
  private readonly started = performance.now();
  private last = this.started;
  private readonly steps: Record<string, number> = {};
  private logged = false;

  constructor(
    private readonly log: Pick<Logger, 'debug' | 'isLevelEnabled'>,
    private readonly op: string,
    private readonly fields: Record<string, unknown> = {},
  ) {
    this.enabled = log.isLevelEnabled('debug');
  }

  /** Ends the step that ran since the previous mark (or the start) and names it. */
  mark(name: string): void {
    if (!this.enabled) return;
    const now = performance.now();
    this.add(name, now - this.last);
    this.last = now;
  }

  /** Times `work` from now until it settles, for steps that run alongside others. */
  time<T>(name: string, work: Promise<T>): Promise<T> {
    if (!this.enabled) return work;
    const start = performance.now();
    const settle = (): void => this.add(name, performance.now() - start);
    work.then(settle, settle);
    return work;
  }

  /** Logs the steps and the total, once; `outcome` tells a failure apart. */
  done(outcome = 'ok'): void {
    if (!this.enabled || this.logged) return;
    this.logged = true;
    this.log.debug({ op: this.op, ...this.fields, outcome, ms: round(performance.now() - this.started), steps: this.steps }, 'steps');
  }

  private add(name: string, ms: number): void {
    this.steps[name] = round((this.steps[name] ?? 0) + ms);
  }
}

function round(ms: number): number {
  return Math.round(ms * 100) / 100;
}
