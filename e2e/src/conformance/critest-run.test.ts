import assert from 'node:assert/strict';
import { test } from 'node:test';
import { critestArgs, CRITEST_UNRUNNABLE_SPECS, leftSharedMemory, parseCritestOptions, UsageError } from './critest-run.js';
import { unrunnableReason } from './unrunnable-specs.js';

const ENDPOINTS = { runtimeSocket: '/run/s/runtime.sock', imageSocket: '/run/s/image.sock', nriSocket: '/run/s/nri.sock' };

test('options: defaults, a report directory named after the time, paths made absolute', () => {
  const options = parseCritestOptions(['--critest-bin', 'bin'], new Date('2026-01-02T03:04:05.678Z'));
  assert.equal(options.critestBin, `${process.cwd()}/bin`);
  assert.equal(options.procs, 4);
  assert.equal(options.reportDir, '/var/tmp/skiff-critest/2026-01-02T03-04-05-678Z');
  assert.equal(options.handler, undefined);
});

test('options: bad ones are refused with the reason', () => {
  assert.throws(() => parseCritestOptions([]), (err: Error) => err instanceof UsageError && /--critest-bin is required/.test(err.message));
  assert.throws(() => parseCritestOptions(['--critest-bin', '/b', '--handler', 'kata']), /--handler takes runsc, not kata/);
  assert.throws(() => parseCritestOptions(['--critest-bin', '/b', '--procs', '0']), /--procs takes a whole number from 1 to 16/);
  assert.throws(() => parseCritestOptions(['--critest-bin', '/b', '--procs', '2.5']), /--procs/);
  assert.throws(() => parseCritestOptions(['--critest-bin', '/b', '--bogus', 'x']), /unknown option --bogus/);
  assert.throws(() => parseCritestOptions(['--critest-bin']), /--critest-bin needs a value/);
});

test('a run: the sockets, parallel specs, both reports, the handler, the filters and the unrunnable specs left out', () => {
  const options = parseCritestOptions(['--critest-bin', '/b', '--handler', 'runsc', '--procs', '3', '--focus', 'Image', '--skip', 'OOM', '--report-dir', '/r']);
  assert.deepEqual(critestArgs(options, ENDPOINTS), [
    '-runtime-endpoint=unix:///run/s/runtime.sock',
    '-image-endpoint=unix:///run/s/image.sock',
    '-nri-socket=/run/s/nri.sock',
    '-runtime-handler=runsc',
    '-parallel=3',
    '-ginkgo.json-report=/r/report.json',
    '-ginkgo.junit-report=/r/junit.xml',
    '-ginkgo.v',
    '-ginkgo.no-color',
    '-ginkgo.timeout=6h',
    '-ginkgo.focus=Image',
    '-ginkgo.skip=OOM',
    '-ginkgo.skip=\\[k8s\\.io\\]\\s+Image\\s+Manager\\s+public\\s+image\\s+with\\s+digest\\s+should\\s+be\\s+pulled\\s+and\\s+removed',
  ]);
});

test('a dry run lists the selection in its own report, unrunnable specs included; runc needs no handler flag', () => {
  const args = critestArgs(parseCritestOptions(['--critest-bin', '/b', '--report-dir', '/r']), ENDPOINTS, { dryRun: true });
  assert.ok(args.includes('-ginkgo.dry-run'));
  assert.ok(args.includes('-ginkgo.json-report=/r/selection/report.json'));
  assert.ok(!args.some((arg) => arg.startsWith('-parallel') || arg.startsWith('-ginkgo.skip') || arg.startsWith('-runtime-handler')));
});

test('the digest-pinned image spec is unrunnable, by its full text as Ginkgo reports it', () => {
  const name = '[k8s.io] Image Manager public image with digest should be pulled and removed [Conformance]';
  assert.match(unrunnableReason(name, CRITEST_UNRUNNABLE_SPECS) ?? '', /test-image-digest@sha256:/);
  assert.equal(unrunnableReason('[k8s.io] Image Manager public image with tag should be pulled and removed [Conformance]', CRITEST_UNRUNNABLE_SPECS), undefined);
});

test("the shared memory the host IPC specs left: new, their size, attached nowhere; nothing else", () => {
  const header = '       key      shmid perms                  size  cpid  lpid nattch   uid   gid  cuid  cgid      atime      dtime      ctime                   rss                  swap\n';
  const row = (id: number, size: number, attached: number): string => ` 1315${id}  ${id}   644   ${size}  100  0  ${attached}  0  0  0  0  0  0  1700000000  0  0\n`;
  const before = header + row(5, 1048576, 0);
  const after = before + row(7, 1048576, 0) + row(8, 1048576, 2) + row(9, 4096, 0);
  assert.deepEqual(leftSharedMemory(before, after), [7]);
  assert.deepEqual(leftSharedMemory(after, after), []);
});
