/**
 * The pure parts of the critest runner (critest.ts): its options, the specs that cannot run here,
 * and the command line critest gets.
 *
 *   parseCritestOptions(args, now?): CritestOptions          throws UsageError on a bad option
 *   CRITEST_UNRUNNABLE_SPECS: readonly UnrunnableSpec[]
 *   critestArgs(options, endpoints, { dryRun? }?): string[]
 *   leftSharedMemory(before, after): number[]   the segments critest's host IPC specs left
 */
import { resolve } from 'node:path';
import { UNRUNNABLE_CRITEST_IMAGES } from '../lib/critest-images.js';
import { skipPattern, type UnrunnableSpec } from './unrunnable-specs.js';

export class UsageError extends Error {}

export interface CritestOptions {
  /** The directory scripts/critest.sh built critest, crictl and ginkgo into. */
  critestBin: string;
  /** Runtime handler every spec's pods run under (critest's -runtime-handler); runc when unset. */
  handler?: string;
  focus?: string;
  skip?: string;
  /** Specs run at once (critest's -parallel); the Serial ones run alone at the end. */
  procs: number;
  reportDir: string;
}

export interface CritestEndpoints {
  runtimeSocket: string;
  imageSocket: string;
  nriSocket: string;
}

/**
 * Most of a spec's time is spent waiting (for containers to start and stop, timeouts), so several
 * run at once even on two cores.
 */
export const DEFAULT_PROCS = 4;

const OPTIONS = ['--critest-bin', '--handler', '--focus', '--skip', '--procs', '--report-dir'];

export function parseCritestOptions(args: readonly string[], now = new Date()): CritestOptions {
  const values = new Map<string, string>();
  for (let i = 0; i < args.length; i += 2) {
    const name = args[i]!;
    const value = args[i + 1];
    if (!OPTIONS.includes(name)) throw new UsageError(`unknown option ${name}`);
    if (value === undefined) throw new UsageError(`${name} needs a value`);
    values.set(name, value);
  }
  const critestBin = values.get('--critest-bin');
  if (critestBin === undefined) throw new UsageError('--critest-bin is required');
  const handler = values.get('--handler');
  if (handler !== undefined && handler !== 'runsc') throw new UsageError(`--handler takes runsc, not ${handler}`);
  const procs = Number(values.get('--procs') ?? DEFAULT_PROCS);
  if (!Number.isInteger(procs) || procs < 1 || procs > 16) throw new UsageError(`--procs takes a whole number from 1 to 16, not ${values.get('--procs')}`);
  const stamp = now.toISOString().replace(/[:.]/g, '-');
  const options: CritestOptions = {
    critestBin: resolve(critestBin),
    procs,
    reportDir: resolve(values.get('--report-dir') ?? `/var/tmp/skiff-critest/${stamp}`),
  };
  if (handler !== undefined) options.handler = handler;
  if (values.has('--focus')) options.focus = values.get('--focus')!;
  if (values.has('--skip')) options.skip = values.get('--skip')!;
  return options;
}

/** critest specs that cannot run on these machines, matched by a part of their full text. */
export const CRITEST_UNRUNNABLE_SPECS: readonly UnrunnableSpec[] = [
  {
    text: '[k8s.io] Image Manager public image with digest should be pulled and removed',
    reason: `pulls ${UNRUNNABLE_CRITEST_IMAGES[0]!.reference}, ${UNRUNNABLE_CRITEST_IMAGES[0]!.reason}`,
  },
];

/**
 * critest's flags. A dry run lists the specs the filters select (in one process: critest's
 * parallel mode needs the ginkgo command and runs nothing in a dry run anyway).
 */
export function critestArgs(options: CritestOptions, endpoints: CritestEndpoints, mode: { dryRun?: boolean } = {}): string[] {
  const args = [
    `-runtime-endpoint=unix://${endpoints.runtimeSocket}`,
    `-image-endpoint=unix://${endpoints.imageSocket}`,
    `-nri-socket=${endpoints.nriSocket}`,
  ];
  if (options.handler !== undefined) args.push(`-runtime-handler=${options.handler}`);
  if (mode.dryRun) {
    args.push('-ginkgo.dry-run', `-ginkgo.json-report=${resolve(options.reportDir, 'selection', 'report.json')}`);
  } else {
    args.push(
      `-parallel=${options.procs}`,
      `-ginkgo.json-report=${resolve(options.reportDir, 'report.json')}`,
      `-ginkgo.junit-report=${resolve(options.reportDir, 'junit.xml')}`,
      '-ginkgo.v',
      '-ginkgo.no-color',
      '-ginkgo.timeout=6h',
    );
  }
  if (options.focus !== undefined) args.push(`-ginkgo.focus=${options.focus}`);
  if (options.skip !== undefined) args.push(`-ginkgo.skip=${options.skip}`);
  // The dry run keeps the unrunnable specs, to count those the filters select as skipped.
  if (!mode.dryRun) for (const spec of CRITEST_UNRUNNABLE_SPECS) args.push(`-ginkgo.skip=${skipPattern(spec)}`);
  return args;
}

/** What critest's host IPC specs make on the host (`ipcmk -M 1048576`) and never remove. */
const HOST_IPC_SEGMENT_BYTES = 1048576;

/**
 * The ids of the shared memory segments in `after` but not in `before` (both /proc/sysvipc/shm)
 * that look like the host IPC specs' own: their size, attached to no process.
 */
export function leftSharedMemory(before: string, after: string): number[] {
  const rows = (text: string): string[][] =>
    text
      .split('\n')
      .slice(1)
      .map((line) => line.trim().split(/\s+/))
      .filter((fields) => fields.length >= 7);
  const existing = new Set(rows(before).map((fields) => fields[1]));
  return rows(after)
    .filter(([, id, , size, , , attached]) => !existing.has(id) && Number(size) === HOST_IPC_SEGMENT_BYTES && attached === '0')
    .map(([, id]) => Number(id));
}
