import { compareNanos } from '../util/time.js';

function startsWithNonZeroDigit(s: string): boolean {
  const c = s.charCodeAt(0);
  return c >= 49 && c <= 57;
}

/**
 * Orders creation times (nanoseconds since the epoch, decimal strings) as compareNanos does, without
 * parsing them when both are written as nowNanos writes them (no sign, no leading zero): then the
 * shorter is the earlier, and of equal lengths the one first in text.
 */
export function compareCreationTimes(a: string, b: string): number {
  if (!startsWithNonZeroDigit(a) || !startsWithNonZeroDigit(b)) return compareNanos(a, b);
  if (a.length !== b.length) return a.length - b.length;
  return a < b ? -1 : a > b ? 1 : 0;
}
