import { constants } from 'node:os';

const SIGRTMIN = 34;
const SIGRTMAX = 64;

const ALIASES: Record<string, number> = { SIGIOT: 6, SIGCLD: 17, SIGPOLL: 29 };

/**
 * A signal's number from the forms images and users write: "SIGTERM", "TERM", "15",
 * "SIGRTMIN+3", "RTMAX-1". Undefined when it names no Linux signal.
 */
export function parseSignal(text: string): number | undefined {
  const s = text.trim().toUpperCase();
  if (/^\d+$/.test(s)) {
    const n = Number(s);
    return n >= 1 && n <= SIGRTMAX ? n : undefined;
  }
  const name = s.startsWith('SIG') ? s : `SIG${s}`;
  const rt = /^SIGRT(MIN|MAX)(?:([+-])(\d+))?$/.exec(name);
  if (rt) {
    const base = rt[1] === 'MIN' ? SIGRTMIN : SIGRTMAX;
    const offset = rt[3] === undefined ? 0 : Number(rt[3]) * (rt[2] === '-' ? -1 : 1);
    const n = base + offset;
    return n >= SIGRTMIN && n <= SIGRTMAX ? n : undefined;
  }
  const known = (constants.signals as Record<string, number>)[name] ?? ALIASES[name];
  return known;
}

/** CRI's Signal enum ("SIGNAL_SIGTERM", "SIGNAL_SIGRTMINPLUS1") as a number; undefined for SIGNAL_RUNTIME_DEFAULT. */
export function criSignalNumber(value: string): number | undefined {
  if (!value.startsWith('SIGNAL_SIG')) return undefined;
  const name = value.slice('SIGNAL_'.length).replace('RTMINPLUS', 'RTMIN+').replace('RTMAXMINUS', 'RTMAX-');
  return parseSignal(name);
}
