import assert from 'node:assert/strict';
import { test } from 'node:test';
import { classifyEntry, type TrustedSender } from './journal-entry.js';
import { encodeExportEntry, ExportParser } from './journal-export.js';

const conmon: TrustedSender = { comm: 'conmon', exe: '/usr/bin/conmon' };
const fromConmon: Array<[string, string]> = [['_UID', '0'], ['_PID', '4242'], ['_COMM', 'conmon'], ['_EXE', '/usr/bin/conmon'], ['_TRANSPORT', 'journal']];
const binary = Buffer.from([0x66, 0x0a, 0x00, 0xff, 0xfe, 0x0a]);
const entries = [
  encodeExportEntry([['__CURSOR', 's=1;i=1'], ['__REALTIME_TIMESTAMP', '1475713029669794'], ['MESSAGE', 'hello\n'], ['CONTAINER_ID_FULL', 'ab'.repeat(32)], ['PRIORITY', '6'], ...fromConmon]),
  encodeExportEntry([['__CURSOR', 's=1;i=2'], ['__REALTIME_TIMESTAMP', '1475713029669795'], ['MESSAGE', binary], ['CONTAINER_ID_FULL', 'ab'.repeat(32)], ['PRIORITY', '3'], ['CONTAINER_PARTIAL_MESSAGE', 'true'], ...fromConmon]),
  encodeExportEntry([['__CURSOR', 's=1;i=3'], ['MESSAGE_ID', 'a596d6fe7bfa4994828e72309e95d61e'], ['MESSAGE', 'Suppressed 42 messages from /skiff/x'], ['_TRANSPORT', 'driver']]),
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
  const [a, b, c] = parser.push(Buffer.concat(entries)).map((f) => classifyEntry(f, conmon));
  assert.ok(a!.kind === 'output' && a.stream === 'stdout' && !a.partial && a.realtimeMicros === 1475713029669794n);
  assert.ok(b!.kind === 'output' && b.stream === 'stderr' && b.partial && b.message.equals(binary));
  assert.ok(c!.kind === 'suppressed' && c.count === 42);
});

/** An entry for a container with these sender fields (as journald records them). */
function output(sender: Array<[string, string]>): Map<string, Buffer> {
  return new ExportParser().push(encodeExportEntry([['__CURSOR', 's=1;i=9'], ['MESSAGE', 'forged\n'], ['CONTAINER_ID_FULL', 'cd'.repeat(32)], ...sender]))[0]!;
}

test("container output counts only from root's conmon; anything else is untrusted", () => {
  const without = (name: string): Array<[string, string]> => fromConmon.filter(([n]) => n !== name);
  const cases: Array<[string, Array<[string, string]>, string]> = [
    ['conmon as root', fromConmon, 'output'],
    ['conmon as root, its executable unreadable by journald', without('_EXE'), 'output'],
    ['conmon as root, gone before journald read its /proc entry', without('_EXE').filter(([n]) => n !== '_COMM'), 'output'],
    ['a user process named conmon', [...without('_UID'), ['_UID', '65534']], 'untrusted'],
    ['no sender credentials', without('_UID'), 'untrusted'],
    ['another root command', [...without('_COMM'), ['_COMM', 'logger']], 'untrusted'],
    ['a root process named conmon, another executable', [...without('_EXE'), ['_EXE', '/tmp/conmon']], 'untrusted'],
  ];
  for (const [what, sender, kind] of cases) assert.equal(classifyEntry(output(sender), conmon).kind, kind, what);
});

test('a rate-limit notice counts only from journald itself; a barrier carries its sender', () => {
  const parser = new ExportParser();
  const [notice, barrier] = parser.push(
    Buffer.concat([
      encodeExportEntry([['__CURSOR', 'c1'], ['MESSAGE_ID', 'a596d6fe7bfa4994828e72309e95d61e'], ['MESSAGE', 'Suppressed 9 messages'], ['_TRANSPORT', 'journal'], ['_UID', '65534']]),
      encodeExportEntry([['__CURSOR', 'c2'], ['SKIFF_LOGS_BARRIER', 'n1'], ['_UID', '0'], ['_PID', '77']]),
    ]),
  );
  assert.equal(classifyEntry(notice!, conmon).kind, 'other');
  assert.deepEqual(classifyEntry(barrier!, conmon), { kind: 'barrier', cursor: 'c2', nonce: 'n1', senderPid: 77, senderUid: 0 });
});
