import assert from 'node:assert/strict';
import { test } from 'node:test';
import { classifyEntry } from './journal-entry.js';
import { encodeExportEntry, ExportParser } from './journal-export.js';

const binary = Buffer.from([0x66, 0x0a, 0x00, 0xff, 0xfe, 0x0a]);
const entries = [
  encodeExportEntry([['__CURSOR', 's=1;i=1'], ['__REALTIME_TIMESTAMP', '1475713029669794'], ['MESSAGE', 'hello\n'], ['CONTAINER_ID_FULL', 'ab'.repeat(32)], ['PRIORITY', '6']]),
  encodeExportEntry([['__CURSOR', 's=1;i=2'], ['__REALTIME_TIMESTAMP', '1475713029669795'], ['MESSAGE', binary], ['CONTAINER_ID_FULL', 'ab'.repeat(32)], ['PRIORITY', '3'], ['CONTAINER_PARTIAL_MESSAGE', 'true']]),
  encodeExportEntry([['__CURSOR', 's=1;i=3'], ['MESSAGE_ID', 'a596d6fe7bfa4994828e72309e95d61e'], ['MESSAGE', 'Suppressed 42 messages from /skiff/x']]),
];

test('the export format is parsed across any chunking, binary fields byte for byte', () => {
  const all = Buffer.concat(entries);
  for (const step of [1, 3, 7, 64, all.length]) {
    const parser = new ExportParser();
    const got = [];
    for (let i = 0; i < all.length; i += step) got.push(...parser.push(Buffer.from(all.subarray(i, i + step))));
    assert.equal(got.length, 3, `chunks of ${step}`);
    assert.equal(parser.pendingBytes, 0);
    assert.ok(got[1]!.get('MESSAGE')!.equals(binary));
    assert.equal(got[0]!.get('MESSAGE')!.toString(), 'hello\n');
  }
});

test('entries are classified: output with stream and partial marker, rate-limit notices', () => {
  const parser = new ExportParser();
  const [a, b, c] = parser.push(Buffer.concat(entries)).map(classifyEntry);
  assert.ok(a!.kind === 'output' && a.stream === 'stdout' && !a.partial && a.realtimeMicros === 1475713029669794n);
  assert.ok(b!.kind === 'output' && b.stream === 'stderr' && b.partial && b.message.equals(binary));
  assert.ok(c!.kind === 'suppressed' && c.count === 42);
});
