/**
 * The soak's settings, from its command line.
 *
 *   parseOptions(argv): SoakOptions     throws UsageError on an unknown option or a bad value
 *   USAGE                               the text `--help` prints
 */

export interface SoakOptions {
  /** How long pods are made and daemons killed; the final checks come after. */
  minutes: number;
  /** Pods per wave. */
  waveSize: number;
  /** A new wave every so many seconds; each wave is deleted when the next one is made. */
  waveSeconds: number;
  /** Numbered lines each wave pod prints a second. */
  linesPerSecond: number;
  /** Seconds between two kills: a uniform draw between these. */
  killMin: number;
  killMax: number;
  /** Every K-th kill is the kubelet's. */
  kubeletKillEvery: number;
}

export class UsageError extends Error {}

export const USAGE = `usage: scripts/soak.sh [options]
  --minutes M             minutes of waves and kills (default 30)
  --wave-size N           pods per wave (default 40)
  --wave-seconds S        a new wave every S seconds; each wave is deleted one wave later (default 30)
  --lines-per-second L    numbered lines each pod prints a second (default 50)
  --kill-min S, --kill-max S   seconds between kills, drawn between the two (default 5 and 20)
  --kubelet-kill-every K  every K-th kill is the kubelet's (default 6)`;

const DEFAULTS: SoakOptions = { minutes: 30, waveSize: 40, waveSeconds: 30, linesPerSecond: 50, killMin: 5, killMax: 20, kubeletKillEvery: 6 };

const FLAGS: Record<string, { key: keyof SoakOptions; integer: boolean }> = {
  '--minutes': { key: 'minutes', integer: false },
  '--wave-size': { key: 'waveSize', integer: true },
  '--wave-seconds': { key: 'waveSeconds', integer: false },
  '--lines-per-second': { key: 'linesPerSecond', integer: true },
  '--kill-min': { key: 'killMin', integer: false },
  '--kill-max': { key: 'killMax', integer: false },
  '--kubelet-kill-every': { key: 'kubeletKillEvery', integer: true },
};

export function parseOptions(argv: readonly string[]): SoakOptions {
  const options = { ...DEFAULTS };
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i]!;
    const [flag, inline] = arg.startsWith('--') && arg.includes('=') ? [arg.slice(0, arg.indexOf('=')), arg.slice(arg.indexOf('=') + 1)] : [arg, undefined];
    const spec = FLAGS[flag];
    if (!spec) throw new UsageError(`unknown option ${arg}`);
    const text = inline ?? argv[++i];
    if (text === undefined) throw new UsageError(`${flag} needs a value`);
    const value = Number(text);
    if (!Number.isFinite(value) || value <= 0 || (spec.integer && !Number.isInteger(value))) throw new UsageError(`${flag} takes a positive ${spec.integer ? 'integer' : 'number'}, not ${text}`);
    options[spec.key] = value;
  }
  if (options.killMin > options.killMax) throw new UsageError(`--kill-min (${options.killMin}) is above --kill-max (${options.killMax})`);
  return options;
}
