export interface InterfaceCounters {
  name: string;
  rxBytes: number;
  rxPackets: number;
  rxErrors: number;
  rxDropped: number;
  txBytes: number;
  txPackets: number;
  txErrors: number;
  txDropped: number;
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
    out.push({
      name,
      rxBytes: fields[0]!,
      rxPackets: fields[1]!,
      rxErrors: fields[2]!,
      rxDropped: fields[3]!,
      txBytes: fields[8]!,
      txPackets: fields[9]!,
      txErrors: fields[10]!,
      txDropped: fields[11]!,
    });
  }
  return out;
}
