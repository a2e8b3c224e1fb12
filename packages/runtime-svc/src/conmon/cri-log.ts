/**
 * The CRI container log format conmon's k8s-file driver writes, one record per line:
 * `<RFC3339Nano time> <stdout|stderr> <P|F> <text>`. P marks a partial line continued by
 * the next record of the same stream; F ends a line.
 */
export interface CriLogRecord {
  time: string;
  stream: 'stdout' | 'stderr';
  partial: boolean;
  text: string;
}

export function parseCriLog(content: string): CriLogRecord[] {
  const records: CriLogRecord[] = [];
  for (const line of content.split('\n')) {
    if (!line) continue;
    const first = line.indexOf(' ');
    const second = line.indexOf(' ', first + 1);
    const third = line.indexOf(' ', second + 1);
    if (first < 0 || second < 0) continue;
    const stream = line.slice(first + 1, second);
    if (stream !== 'stdout' && stream !== 'stderr') continue;
    const tag = third < 0 ? line.slice(second + 1) : line.slice(second + 1, third);
    const text = third < 0 ? '' : line.slice(third + 1);
    records.push({ time: line.slice(0, first), stream, partial: tag === 'P', text });
  }
  return records;
}

/** Reassembles a stream's bytes from the records: full lines get their newline back. */
export function splitCriLogStreams(content: string): { stdout: string; stderr: string } {
  const out = { stdout: '', stderr: '' };
  for (const r of parseCriLog(content)) out[r.stream] += r.partial ? r.text : `${r.text}\n`;
  return out;
}

const NEWLINE = 0x0a;
const SPACE = 0x20;

/**
 * The same reassembly on raw bytes, for output that need not be UTF-8 (conmon copies the bytes
 * through unchanged; only the record framing is text).
 */
export function splitCriLogStreamBytes(content: Buffer): { stdout: Buffer; stderr: Buffer } {
  const parts: Record<'stdout' | 'stderr', Buffer[]> = { stdout: [], stderr: [] };
  let start = 0;
  while (start < content.length) {
    let end = content.indexOf(NEWLINE, start);
    if (end < 0) end = content.length;
    const line = content.subarray(start, end);
    start = end + 1;
    const first = line.indexOf(SPACE);
    const second = first < 0 ? -1 : line.indexOf(SPACE, first + 1);
    if (second < 0) continue;
    const stream = line.subarray(first + 1, second).toString('latin1');
    if (stream !== 'stdout' && stream !== 'stderr') continue;
    const third = line.indexOf(SPACE, second + 1);
    const tag = line.subarray(second + 1, third < 0 ? line.length : third).toString('latin1');
    parts[stream].push(third < 0 ? Buffer.alloc(0) : line.subarray(third + 1));
    if (tag !== 'P') parts[stream].push(Buffer.from([NEWLINE]));
  }
  return { stdout: Buffer.concat(parts.stdout), stderr: Buffer.concat(parts.stderr) };
}
