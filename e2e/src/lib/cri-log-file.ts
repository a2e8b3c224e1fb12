/**
 * The kubelet's CRI log file as the tests expect it, read without logs-svc's code: each record is
 * `<RFC3339Nano time> <stdout|stderr> <P|F> <content>\n`, where P marks a piece of a longer line
 * and F a line's last piece (its newline not written). A record that does not fit fails the test.
 *
 *   criRecords(raw)   the records, in file order
 *   criStreams(raw)   stdout and stderr as the container wrote them (an F record ends a line)
 *   withoutTimes(raw) the file as latin1 text with every record's time cut off, for comparing whole files
 */
import assert from 'node:assert/strict';

export interface CriRecord {
  stream: 'stdout' | 'stderr';
  tag: 'P' | 'F';
  content: Buffer;
}

const RECORD_HEAD = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{9}(?:Z|[+-]\d\d:\d\d) (stdout|stderr) ([PF]) /;

export function criRecords(raw: Buffer): CriRecord[] {
  const records: CriRecord[] = [];
  for (let at = 0, n = 1; at < raw.length; n++) {
    const end = raw.indexOf(0x0a, at);
    assert.ok(end >= 0, `record ${n} has no newline at its end`);
    const line = raw.subarray(at, end);
    const head = RECORD_HEAD.exec(line.toString('latin1'));
    assert.ok(head, `record ${n} does not start "<RFC3339Nano time> <stream> <P|F> ": ${JSON.stringify(line.subarray(0, 60).toString('latin1'))}`);
    records.push({ stream: head[1] as CriRecord['stream'], tag: head[2] as CriRecord['tag'], content: line.subarray(head[0].length) });
    at = end + 1;
  }
  return records;
}

export function criStreams(raw: Buffer): { stdout: Buffer; stderr: Buffer } {
  const out: Record<CriRecord['stream'], Buffer[]> = { stdout: [], stderr: [] };
  for (const r of criRecords(raw)) out[r.stream].push(r.tag === 'F' ? Buffer.concat([r.content, Buffer.from('\n')]) : r.content);
  return { stdout: Buffer.concat(out.stdout), stderr: Buffer.concat(out.stderr) };
}

export function withoutTimes(raw: Buffer): string {
  criRecords(raw);
  return raw.toString('latin1').replace(/^\S+ /gm, '');
}
