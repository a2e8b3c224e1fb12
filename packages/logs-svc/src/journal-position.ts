/**
 * Where the follower stands in the journal: every entry at or before it has been taken. It is the
 * cursor of the last entry taken, or, before the first one, the time reading started from (the
 * follower takes entries from that second on).
 */
export type JournalPosition = { cursor: string } | { sinceSeconds: number };

interface CursorFields {
  seqnumId: string;
  seqnum: bigint;
  realtime: bigint;
}

/** The parts of a journald cursor (`s=<seqnum id>;i=<seqnum>;b=…;m=…;t=<realtime>;x=…`, hex numbers). */
function cursorFields(cursor: string): CursorFields | undefined {
  const parts = new Map<string, string>();
  for (const part of cursor.split(';')) {
    const eq = part.indexOf('=');
    if (eq > 0) parts.set(part.slice(0, eq), part.slice(eq + 1));
  }
  const seqnumId = parts.get('s');
  const seqnum = parts.get('i');
  const realtime = parts.get('t');
  if (!seqnumId || !seqnum || !realtime || !/^[0-9a-f]+$/i.test(seqnum) || !/^[0-9a-f]+$/i.test(realtime)) return undefined;
  return { seqnumId, seqnum: BigInt(`0x${seqnum}`), realtime: BigInt(`0x${realtime}`) };
}

/**
 * Whether an entry comes at or before a position, in the order journalctl reads entries: by
 * sequence number within one sequence (a journald's files, rotation included), else by time.
 */
export function entryAtOrBefore(entry: { cursor: string; realtimeMicros: bigint }, position: JournalPosition): boolean {
  if ('sinceSeconds' in position) return entry.realtimeMicros < BigInt(position.sinceSeconds) * 1_000_000n;
  const a = cursorFields(entry.cursor);
  const b = cursorFields(position.cursor);
  if (!a || !b) throw new Error(`cannot order journal cursors ${JSON.stringify(entry.cursor)} and ${JSON.stringify(position.cursor)}`);
  return a.seqnumId === b.seqnumId ? a.seqnum <= b.seqnum : a.realtime <= b.realtime;
}
