import assert from 'node:assert/strict';
import { test } from 'node:test';
import { formatRecords, formatTimestamp, MAX_RECORD_CONTENT, parseCriLine, parseCriLog, parseRfc3339Nano, reassembleStreams, type StreamName } from './cri-log.js';

const T = formatTimestamp(1_475_713_029_669_794n);

test('timestamps are RFC3339Nano in UTC with nine fraction digits', () => {
  assert.equal(T, '2016-10-06T00:17:09.669794000Z');
  assert.equal(parseRfc3339Nano(T), 1_475_713_029_669_794_000n);
  assert.equal(parseRfc3339Nano('2016-10-06T02:17:09.669794202+02:00'), 1_475_713_029_669_794_202n);
  assert.equal(parseRfc3339Nano('2016-10-06T00:17:09Z'), 1_475_713_029_000_000_000n);
  assert.throws(() => parseRfc3339Nano('2016-10-06 00:17:09Z'));
});

test('a complete line is one F record without its newline', () => {
  const [r] = formatRecords(T, 'stdout', Buffer.from('hello\n'), false);
  assert.equal(r!.toString(), `${T} stdout F hello\n`);
});

test('the kubelet rules: stream and tag are checked, further tags after ":" are allowed', () => {
  assert.deepEqual(parseCriLine(Buffer.from(`${T} stderr P:x a b`)).content.toString(), 'a b');
  assert.equal(parseCriLine(Buffer.from(`${T} stdout F `)).content.length, 0);
  assert.throws(() => parseCriLine(Buffer.from(`${T} stdin F x`)), /stream type/);
  assert.throws(() => parseCriLine(Buffer.from(`${T} stdout X x`)), /tag/);
  assert.throws(() => parseCriLine(Buffer.from(`${T} stdout F`)), /tag is not found/);
  assert.throws(() => parseCriLine(Buffer.from(`yesterday stdout F x`)), /RFC3339Nano/);
});

function roundTrip(pieces: Array<{ stream: StreamName; bytes: Buffer; partial: boolean }>): Record<StreamName, Buffer> {
  const file = Buffer.concat(pieces.flatMap((p) => formatRecords(T, p.stream, p.bytes, p.partial)));
  return reassembleStreams(parseCriLog(file));
}

test('long lines become P records that reassemble byte for byte, binary included', () => {
  const big = Buffer.alloc(1024 * 1024 + 3);
  for (let i = 0; i < big.length; i++) big[i] = i % 7 === 0 ? 0xff : 0x41 + (i % 26);
  const records = formatRecords(T, 'stdout', Buffer.concat([big, Buffer.from('\n')]), false);
  assert.equal(records.length, Math.ceil(big.length / MAX_RECORD_CONTENT));
  const parsed = parseCriLog(Buffer.concat(records));
  assert.ok(parsed.slice(0, -1).every((r) => r.partial) && !parsed.at(-1)!.partial);
  assert.ok(roundTrip([{ stream: 'stdout', bytes: Buffer.concat([big, Buffer.from('\n')]), partial: false }]).stdout.equals(Buffer.concat([big, Buffer.from('\n')])));
});

test('journald partial pieces, a final piece without newline and both streams reassemble exactly', () => {
  const out = roundTrip([
    { stream: 'stdout', bytes: Buffer.from('abc'), partial: true },
    { stream: 'stderr', bytes: Buffer.from([0x00, 0xc3, 0x28, 0x0a]), partial: false },
    { stream: 'stdout', bytes: Buffer.from('def\n'), partial: false },
    { stream: 'stdout', bytes: Buffer.from('two\nlines\n'), partial: false },
    { stream: 'stdout', bytes: Buffer.from('\n'), partial: false },
    { stream: 'stdout', bytes: Buffer.from('tail'), partial: true },
  ]);
  assert.equal(out.stdout.toString(), 'abcdef\ntwo\nlines\n\ntail');
  assert.deepEqual([...out.stderr], [0x00, 0xc3, 0x28, 0x0a]);
});
