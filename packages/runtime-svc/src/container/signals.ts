import { constants } from 'node:os';
import type { cri } from '@skiff/proto';

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

function linuxSignalName(signal: number): string | undefined {
  if (signal === SIGRTMIN) return 'SIGRTMIN';
  if (signal === SIGRTMAX) return 'SIGRTMAX';
  if (signal > SIGRTMIN && signal <= SIGRTMIN + 15) return `SIGRTMINPLUS${signal - SIGRTMIN}`;
  if (signal >= SIGRTMAX - 14 && signal < SIGRTMAX) return `SIGRTMAXMINUS${SIGRTMAX - signal}`;
  // Where Linux has two names for a number (SIGABRT and SIGIOT), Node lists the usual one first.
  return Object.entries(constants.signals as Record<string, number>).find(([, n]) => n === signal)?.[0];
}

/** A signal number as CRI's Signal enum ("SIGNAL_SIGQUIT" for 3); SIGNAL_RUNTIME_DEFAULT for none. */
export function criSignalName(signal: number): cri.Signal__Output {
  const name = linuxSignalName(signal);
  return name === undefined ? 'SIGNAL_RUNTIME_DEFAULT' : (`SIGNAL_${name}` as cri.Signal__Output);
}
