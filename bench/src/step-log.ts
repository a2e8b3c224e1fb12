/**
 * runtime-svc's step log, as `skiff up` prints it at debug level: one JSON line per operation
 * (`"msg":"steps"`, with `op`, `ms` and `steps: { name: ms }`, see @skiff/common's StepTimer).
 */
import { percentile } from './stats.js';

export interface StepLine {
  /** Epoch ms at which the operation ended (pino's time). */
  time?: number;
  /** The container of a container operation (StartContainer, ...). */
  container?: string;
  msg?: string;
  op?: string;
  outcome?: string;
  ms?: number;
  steps?: Record<string, number>;
}

/** The JSON log lines of `skiff up`'s output that contain `needle` (a cheap filter before parsing). */
export function logEntries<T>(output: string, needle: string): T[] {
  const entries: T[] = [];
  for (const line of output.split('\n')) {
    if (!line.includes(needle)) continue;
    try {
      entries.push(JSON.parse(line) as T);
    } catch {
      // not a log line
    }
  }
  return entries;
}

/** The median of each step of each operation in runtime-svc's step log (from `skiff up`'s output). */
export function stepMedians(output: string, fmt: (ms: number) => string): string[][] {
  const byOp = new Map<string, { totals: number[]; steps: Map<string, number[]> }>();
  for (const entry of logEntries<StepLine>(output, '"steps"')) {
    if (entry.msg !== 'steps' || entry.op === undefined || entry.outcome !== 'ok' || entry.ms === undefined) continue;
    let op = byOp.get(entry.op);
    if (op === undefined) byOp.set(entry.op, (op = { totals: [], steps: new Map() }));
    op.totals.push(entry.ms);
    for (const [name, ms] of Object.entries(entry.steps ?? {})) {
      let list = op.steps.get(name);
      if (list === undefined) op.steps.set(name, (list = []));
      list.push(ms);
    }
  }
  const rows: string[][] = [];
  for (const [name, op] of byOp) {
    rows.push([name, String(op.totals.length), fmt(percentile(op.totals, 50))]);
    for (const [step, list] of op.steps) rows.push([`  ${step}`, String(list.length), fmt(percentile(list, 50))]);
  }
  return rows;
}
