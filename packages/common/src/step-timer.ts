import { readFileSync, rmSync } from 'node:fs';
import type { Logger } from './logger.js';

/**
 * Kill points for the restart tests, inert in a deployment: only when the environment variable
 * SKIFF_TEST_KILL_STEP_FILE names a file (the e2e tests set it; nothing else does) is that file
 * read at the end of every step, and a daemon whose operation reaches the step it names
 * (`<operation>:<step>`, as the StepTimer calls them) removes the file and SIGKILLs itself there;
 * named `<operation>:<step> SIGSTOP`, it stops itself there instead, until the test sends SIGCONT.
 * So a test kills or holds a call at each of its steps in turn, whatever the machine's speed.
 * Unset, it costs one look at the environment when the module loads.
 */
const KILL_STEP_FILE = process.env['SKIFF_TEST_KILL_STEP_FILE'] || undefined;
const HOLD_SUFFIX = ' SIGSTOP';

function killIfNamed(op: string, step: string): void {
  if (KILL_STEP_FILE === undefined) return;
  let named: string;
  try {
    named = readFileSync(KILL_STEP_FILE, 'utf8').trim();
  } catch {
    return;
  }
  const held = named.endsWith(HOLD_SUFFIX);
  if ((held ? named.slice(0, -HOLD_SUFFIX.length) : named) !== `${op}:${step}`) return;
  rmSync(KILL_STEP_FILE, { force: true });
  process.kill(process.pid, held ? 'SIGSTOP' : 'SIGKILL');
}

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
    killIfNamed(this.op, name);
    if (!this.enabled) return;
    const now = performance.now();
    this.add(name, now - this.last);
    this.last = now;
  }

  /** Times `work` from now until it settles, for steps that run alongside others. */
  time<T>(name: string, work: Promise<T>): Promise<T> {
    if (KILL_STEP_FILE !== undefined) work.then(() => killIfNamed(this.op, name), () => undefined);
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
