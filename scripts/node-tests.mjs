#!/usr/bin/env node
// Runs a package's tests with Node's test runner on the files named explicitly, whatever the Node
// version makes of a directory argument, and fails when no test ran.
//
//   node scripts/node-tests.mjs DIR [--only=REGEX] [--private-journal] [node --test options...]
//
// Every *.test.js below DIR is run (with --only, those whose file name matches REGEX); the spec
// report goes to stdout and a TAP copy to a temp file, whose closing count must show at least one
// test, and in which no file stands for itself (a file that declared no test). A test that hangs
// fails after TEST_TIMEOUT_MS; a run still going after RUN_TIMEOUT_MS (a failed test left a timer
// or a child that keeps its file's process alive) is ended, and fails.
//
// With --private-journal the tests run in mount and PID namespaces of their own, under catatonit,
// with tmpfs over /run/systemd, /run/log and /var/log/journal: the journald they start (through
// ensureJournald) is theirs, its journal starts empty in memory, and it ends with the run. A test
// of logs-svc's follower against the host's journal would wait on the host's files instead: from
// a cold disk, a `journalctl --since` seeks into every one of them.
import { spawn } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';

const [dir, ...args] = process.argv.slice(2);
if (!dir) {
  console.error('usage: node-tests.mjs DIR [--only=REGEX] [node --test options...]');
  process.exit(2);
}
const only = new RegExp(args.find((a) => a.startsWith('--only='))?.slice('--only='.length) ?? '');
const privateJournal = args.includes('--private-journal');
const options = args.filter((a) => !a.startsWith('--only=') && a !== '--private-journal');

function testFiles(root) {
  const found = [];
  for (const entry of readdirSync(root, { withFileTypes: true })) {
    const path = join(root, entry.name);
    if (entry.isDirectory() && entry.name !== 'node_modules') found.push(...testFiles(path));
    else if (entry.isFile() && entry.name.endsWith('.test.js') && only.test(entry.name)) found.push(path);
  }
  return found;
}

const files = testFiles(dir).sort();
if (files.length === 0) {
  console.error(`node-tests: no *.test.js matching ${only} under ${dir} (was the package built?)`);
  process.exit(1);
}

const TEST_TIMEOUT_MS = 20 * 60 * 1000;
// The end-to-end suite on a machine with nothing cached builds its images first: it is given more.
const RUN_TIMEOUT_MS = Number(process.env['SKIFF_TESTS_RUN_MINUTES'] ?? 45) * 60 * 1000;
const work = mkdtempSync(join(tmpdir(), 'node-tests-'));
const tap = join(work, 'report.tap');
const testRun = [
  process.execPath,
  '--test',
  `--test-timeout=${TEST_TIMEOUT_MS}`,
  '--test-reporter=spec',
  '--test-reporter-destination=stdout',
  '--test-reporter=tap',
  `--test-reporter-destination=${tap}`,
  ...options,
  ...files.map((f) => relative(process.cwd(), f)),
];
const PRIVATE_JOURNAL_MOUNTS = ['/run/systemd', '/run/log', '/var/log/journal']
  .map((path) => `mkdir -p ${path} && mount -t tmpfs -o mode=0755 skiff-test-journal ${path}`)
  .join(' && ');
// catatonit, the namespace's PID 1, passes the run's signals on; once it ends, the kernel ends
// whatever is left in the namespace, the journald the tests started among them.
const argv = privateJournal
  ? ['unshare', '--mount', '--propagation', 'private', '--pid', '--fork', '--kill-child', '--mount-proc', '--', '/usr/bin/catatonit', '--', 'sh', '-c', `${PRIVATE_JOURNAL_MOUNTS} && exec "$@"`, 'sh', ...testRun]
  : testRun;
// In a process group of its own, so that the whole run, each file's process included, can be ended.
const child = spawn(argv[0], argv.slice(1), { stdio: 'inherit', detached: true });
const endRun = (signal) => {
  try {
    process.kill(-child.pid, signal);
  } catch {
    // Already gone.
  }
};
for (const signal of ['SIGINT', 'SIGTERM']) process.on(signal, () => endRun(signal));
let timedOut = false;
const watchdog = setTimeout(() => {
  timedOut = true;
  console.error(`node-tests: the tests under ${dir} were still running after ${RUN_TIMEOUT_MS / 60000} minutes; ending them`);
  endRun('SIGKILL');
}, RUN_TIMEOUT_MS);
child.on('exit', (code, signal) => {
  clearTimeout(watchdog);
  if (timedOut) process.exit(1);
  const report = readFileSync(tap, 'utf8');
  rmSync(work, { recursive: true, force: true });
  const ran = Number(/^# tests (\d+)$/m.exec(report)?.[1] ?? 0);
  if (ran === 0) {
    console.error(`node-tests: ${files.length} test files under ${dir} ran no test`);
    process.exit(1);
  }
  // A file that declared no test is reported as one test named after the file itself.
  const reported = new Set([...report.matchAll(/^(?:not )?ok \d+ - (.*)$/gm)].map((m) => m[1]));
  const empty = files.filter((f) => reported.has(f) || reported.has(relative(process.cwd(), f)));
  if (empty.length > 0) {
    console.error(`node-tests: these files ran no test: ${empty.join(', ')}`);
    process.exit(1);
  }
  process.exit(signal ? 1 : (code ?? 1));
});
