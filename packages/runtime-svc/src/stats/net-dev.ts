export interface InterfaceCounters {
  name: string;
  rxBytes: number;
  rxErrors: number;
  txBytes: number;
  txErrors: number;
}

/** /proc/<pid>/net/dev: per-interface counters of the namespace the process is in; loopback left out. */
export function parseNetDev(text: string): InterfaceCounters[] {
  const out: InterfaceCounters[] = [];
  for (const line of text.split('\n').slice(2)) {
    const colon = line.indexOf(':');
    if (colon < 0) continue;
    const name = line.slice(0, colon).trim();
    const fields = line.slice(colon + 1).trim().split(/\s+/).map(Number);
    if (name === 'lo' || fields.length < 16) continue;
    out.push({ name, rxBytes: fields[0]!, rxErrors: fields[2]!, txBytes: fields[8]!, txErrors: fields[10]! });
  }
  return out;
}
