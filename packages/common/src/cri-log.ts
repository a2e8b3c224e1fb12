/**
 * The CRI container log format the kubelet reads, one record per line:
 * `<RFC3339Nano time> <stdout|stderr> <P|F> <content>\n`. A P record is a piece of a line that the
 * next record of the same stream continues; an F record ends the line (its newline is implied).
 * Content is bytes: nothing here decodes it. logs-svc writes these files; runtime-svc reads the
 * ones conmon writes for an ExecSync.
 */

export type StreamName = 'stdout' | 'stderr';

/** Longest content of one record; longer lines are cut into P records (the kubelet's own limit is larger). */
export const MAX_RECORD_CONTENT = 16 * 1024;

const NEWLINE = 0x0a;
const SPACE = 0x20;

let cachedSecond = -1;
let cachedPrefix = '';

/** RFC3339Nano in UTC with all nine fraction digits, from microseconds since the epoch. */
export function formatTimestamp(realtimeMicros: bigint): string {
  const seconds = Number(realtimeMicros / 1_000_000n);
  const micros = Number(realtimeMicros % 1_000_000n);
  if (seconds !== cachedSecond) {
    cachedSecond = seconds;
    cachedPrefix = new Date(seconds * 1000).toISOString().slice(0, 19);
  }
  return `${cachedPrefix}.${String(micros).padStart(6, '0')}000Z`;
}

function record(time: string, stream: StreamName, partial: boolean, content: Buffer): Buffer {
  const head = Buffer.from(`${time} ${stream} ${partial ? 'P' : 'F'} `, 'latin1');
  const out = Buffer.allocUnsafe(head.length + content.length + 1);
  head.copy(out, 0);
  content.copy(out, head.length);
  out[out.length - 1] = NEWLINE;
  return out;
}

/**
 * The records for one piece of a stream's output. `partial` says the piece does not end its line;
 * a piece that does may carry its newline, which the F record drops. Newlines inside the piece
 * end lines of their own, and any line longer than MAX_RECORD_CONTENT is cut into P records, so
 * that concatenating P contents and adding a newline after each F gives back the bytes exactly.
 */
export function formatRecords(time: string, stream: StreamName, piece: Buffer, partial: boolean): Buffer[] {
  const out: Buffer[] = [];
  let body = piece;
  let endsLine = !partial;
  if (body.length > 0 && body[body.length - 1] === NEWLINE) {
    // A piece that ends in a newline ends its line, even one marked partial.
    body = body.subarray(0, body.length - 1);
    endsLine = true;
  }
  let start = 0;
  for (;;) {
    const nl = body.indexOf(NEWLINE, start);
    const lineEnd = nl < 0 ? body.length : nl;
    const lastLine = nl < 0;
    let pos = start;
    while (lineEnd - pos > MAX_RECORD_CONTENT) {
      out.push(record(time, stream, true, body.subarray(pos, pos + MAX_RECORD_CONTENT)));
      pos += MAX_RECORD_CONTENT;
    }
    const full = !lastLine || endsLine;
    if (full || lineEnd > pos) out.push(record(time, stream, !full, body.subarray(pos, lineEnd)));
    if (lastLine) break;
    start = nl + 1;
  }
  return out;
}

export interface CriRecord {
  /** The timestamp as written. */
  time: string;
  /** The timestamp in nanoseconds since the epoch. */
  timeNanos: bigint;
  stream: StreamName;
  partial: boolean;
  content: Buffer;
}

export class CriParseError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'CriParseError';
  }
}

const RFC3339_NANO = /^(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2}):(\d{2})(?:\.(\d{1,9}))?(Z|[+-]\d{2}:\d{2})$/;

/** Parses a timestamp the way Go's time.Parse(time.RFC3339Nano) accepts it; nanoseconds since the epoch. */
export function parseRfc3339Nano(text: string): bigint {
  const m = RFC3339_NANO.exec(text);
  if (!m) throw new CriParseError(`timestamp ${JSON.stringify(text)} is not RFC3339Nano`);
  const [, y, mo, d, h, mi, s, frac, zone] = m as unknown as string[];
  const month = Number(mo);
  const day = Number(d);
  if (month < 1 || month > 12 || day < 1 || day > 31 || Number(h) > 23 || Number(mi) > 59 || Number(s) > 59) {
    throw new CriParseError(`timestamp ${JSON.stringify(text)} is out of range`);
  }
  let ms = Date.UTC(Number(y), month - 1, day, Number(h), Number(mi), Number(s));
  if (zone !== 'Z') {
    const sign = zone!.startsWith('-') ? -1 : 1;
    ms -= sign * (Number(zone!.slice(1, 3)) * 60 + Number(zone!.slice(4, 6))) * 60_000;
  }
  return BigInt(ms) * 1_000_000n + BigInt((frac ?? '').padEnd(9, '0') || '0');
}

/**
 * One log line (without its newline) by the kubelet's rules: a timestamp, a space, the stream
 * (stdout or stderr), a space, the tag (P or F, possibly followed by ":"-separated further tags),
 * a space, then the content. Anything else is an error.
 */
export function parseCriLine(line: Buffer): CriRecord {
  const first = line.indexOf(SPACE);
  if (first < 0) throw new CriParseError('timestamp is not found');
  const time = line.subarray(0, first).toString('latin1');
  const timeNanos = parseRfc3339Nano(time);
  const second = line.indexOf(SPACE, first + 1);
  if (second < 0) throw new CriParseError('stream type is not found');
  const stream = line.subarray(first + 1, second).toString('latin1');
  if (stream !== 'stdout' && stream !== 'stderr') throw new CriParseError(`unexpected stream type ${JSON.stringify(stream)}`);
  const third = line.indexOf(SPACE, second + 1);
  if (third < 0) throw new CriParseError('log tag is not found');
  const tag = line.subarray(second + 1, third).toString('latin1').split(':')[0];
  if (tag !== 'P' && tag !== 'F') throw new CriParseError(`unexpected log tag ${JSON.stringify(tag)}`);
  return { time, timeNanos, stream, partial: tag === 'P', content: line.subarray(third + 1) };
}

/** Every record of a log file's bytes; a trailing piece without a newline is not a record yet. */
export function parseCriLog(content: Buffer): CriRecord[] {
  const out: CriRecord[] = [];
  let start = 0;
  for (;;) {
    const nl = content.indexOf(NEWLINE, start);
    if (nl < 0) break;
    out.push(parseCriLine(content.subarray(start, nl)));
    start = nl + 1;
  }
  return out;
}

/** Each stream's bytes put back together: P contents as they are, a newline after each F. */
export function reassembleStreams(records: readonly CriRecord[]): Record<StreamName, Buffer> {
  const parts: Record<StreamName, Buffer[]> = { stdout: [], stderr: [] };
  const nl = Buffer.from([NEWLINE]);
  for (const r of records) {
    parts[r.stream].push(r.content);
    if (!r.partial) parts[r.stream].push(nl);
  }
  return { stdout: Buffer.concat(parts.stdout), stderr: Buffer.concat(parts.stderr) };
}

/**
 * Each stream's bytes from a log only conmon wrote (an ExecSync's output): a line that is not a
 * record is passed over rather than refused, and a last line without its newline still counts.
 */
export function reassembleConmonLog(content: Buffer): Record<StreamName, Buffer> {
  const records: CriRecord[] = [];
  let start = 0;
  while (start < content.length) {
    let end = content.indexOf(NEWLINE, start);
    if (end < 0) end = content.length;
    try {
      records.push(parseCriLine(content.subarray(start, end)));
    } catch (err) {
      if (!(err instanceof CriParseError)) throw err;
    }
    start = end + 1;
  }
  return reassembleStreams(records);
}
