/**
 * What the soak found: counters, problems by kind, notes, and the one summary line.
 *
 *   class Report {
 *     kills, pods, lines                     counted as the soak goes
 *     problem(kind, count, detail)           lost | duplicated | spurious | leaked | other
 *     note(detail)                           a figure worth printing that is no problem
 *     total(kind), ok(), print()             print(): notes, problems, then the summary line
 *   }
 */
import { since } from './clock.js';

export type ProblemKind = 'lost' | 'duplicated' | 'spurious' | 'leaked' | 'other';

export interface Problem {
  kind: ProblemKind;
  count: number;
  detail: string;
  at: number;
}

export class Report {
  kills = 0;
  pods = 0;
  lines = 0;
  readonly problems: Problem[] = [];
  readonly notes: string[] = [];

  problem(kind: ProblemKind, count: number, detail: string): void {
    if (count <= 0) return;
    this.problems.push({ kind, count, detail, at: Date.now() });
    process.stderr.write(`soak ${since()} ${new Date().toISOString()}: PROBLEM ${kind} ${count}: ${detail}\n`);
  }

  note(detail: string): void {
    this.notes.push(detail);
  }

  total(kind: ProblemKind): number {
    return this.problems.filter((p) => p.kind === kind).reduce((sum, p) => sum + p.count, 0);
  }

  /** No problem of any kind: a session ended by the wrong kill fails the soak too. */
  ok(): boolean {
    return this.problems.length === 0;
  }

  summary(): string {
    return `soak: ${this.kills} kills, ${this.pods} pods, ${this.lines} lines, ${this.total('lost')} lost, ${this.total('duplicated')} duplicated, ${this.total('spurious')} spurious restarts, ${this.total('leaked')} leaked`;
  }

  print(): void {
    const out: string[] = [];
    for (const n of this.notes) out.push(`soak note: ${n}`);
    for (const p of this.problems) out.push(`soak problem (${p.kind}, ${p.count}) at ${since(undefined, p.at)}: ${p.detail}`);
    out.push(this.summary());
    process.stdout.write(`${out.join('\n')}\n`);
  }
}
