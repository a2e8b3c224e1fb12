import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { appendFile, chmod, mkdtemp, readFile, rename, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout } from 'node:timers/promises';
import { test } from 'node:test';
import { createLogger, ensureJournald, SpawnServer } from '@skiff/common';
import { JournalWakeup } from './journal-wakeup.js';
import { BarrierTimeout, LogEngine } from './log-engine.js';

const log = createLogger('logs-svc-test', 'warn');

/**
 * These tests send container output with logger(1), as root, in place of conmon: the engine is told
 * to trust that sender as it trusts conmon.
 */
const sender = { comm: 'logger', exe: '/usr/bin/logger' };
const AS_NOBODY = ['setpriv', '--reuid=65534', '--regid=65534', '--clear-groups'];

/** Sends entries shaped like conmon's (over the same native socket) for a container id. */
function sendLines(id: string, lines: string[], priority = 6, asUser: string[] = []): Promise<void> {
  return new Promise<void>((resolve, reject) => {
    const argv = [...asUser, 'logger', '--journald'];
    const child = spawn(argv[0]!, argv.slice(1), { stdio: ['pipe', 'ignore', 'inherit'] });
    child.on('close', (code) => (code === 0 ? resolve() : reject(new Error(`logger exited ${code}`))));
    // logger takes one entry per run; several are sent one after the other below.
    child.stdin.end(`MESSAGE=${lines[0]}\nCONTAINER_ID_FULL=${id}\nPRIORITY=${priority}\nSYSLOG_IDENTIFIER=${id}\n`);
  }).then(() => (lines.length > 1 ? sendLines(id, lines.slice(1), priority, asUser) : undefined));
}

/**
 * The streams of a CRI log file, read by the kubelet's rule rather than with cri-format.ts (which
 * wrote it): every record is `<RFC3339Nano time> <stdout|stderr> <P|F> <content>\n`, F ending a line.
 */
async function streams(path: string): Promise<{ stdout: string; stderr: string }> {
  const records = (await readFile(path, 'latin1')).split('\n');
  assert.equal(records.pop(), '', 'the file ends with a whole record');
  const out = { stdout: '', stderr: '' };
  for (const record of records) {
    const m = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{9}(?:Z|[+-]\d\d:\d\d) (stdout|stderr) ([PF]) (.*)$/s.exec(record);
    assert.ok(m, `not a CRI log record: ${JSON.stringify(record)}`);
    out[m[1] as 'stdout' | 'stderr'] += m[3]! + (m[2] === 'F' ? '\n' : '');
  }
  return { stdout: Buffer.from(out.stdout, 'latin1').toString(), stderr: Buffer.from(out.stderr, 'latin1').toString() };
}

/** The filesystem type mounted at each of these paths, from this process's mount table. */
async function mountTypes(paths: string[]): Promise<Record<string, string | undefined>> {
  const table = (await readFile('/proc/self/mountinfo', 'utf8')).split('\n').map((line) => {
    const [before, after] = line.split(' - ');
    return { at: before?.split(' ')[4], type: after?.split(' ')[0] };
  });
  // The last mount at a path is the one on top.
  return Object.fromEntries(paths.map((path) => [path, table.filter((m) => m.at === path).at(-1)?.type]));
}

test("these tests' journal is their own, in memory: the host's journal files, whatever their number, are not read", async () => {
  // package.json runs these tests with node-tests.mjs --private-journal.
  assert.deepEqual(await mountTypes(['/run/systemd', '/run/log', '/var/log/journal']), {
    '/run/systemd': 'tmpfs',
    '/run/log': 'tmpfs',
    '/var/log/journal': 'tmpfs',
  });
});

test('a restart cuts bytes written past the saved state and resumes after the saved cursor', async (t) => {
  // On a host whose PID 1 is not systemd nothing else starts journald.
  await ensureJournald();
  const dir = await mkdtemp(join(tmpdir(), 'logs-svc-'));
  const id = randomBytes(32).toString('hex');
  const path = join(dir, 'pod', 'c.log');
  const options = { stateDir: join(dir, 'state'), journalctl: '/usr/bin/journalctl', log, barrierTimeoutMs: 20_000, sender };

  let engine = await LogEngine.open(options);
  t.after(async () => {
    await engine.stop();
    await rm(dir, { recursive: true, force: true });
  });
  await engine.start(new Map([[id, path]]));
  assert.ok(existsSync(path), 'the file exists as soon as the container is followed');
  await sendLines(id, ['one', 'two']);
  await sendLines(id, ['oops'], 3);
  await engine.flush(id);
  assert.deepEqual(await streams(path), { stdout: 'one\ntwo\n', stderr: 'oops\n' });
  await engine.stop();

  // What a crash between writing a batch and saving the state leaves: bytes past the saved size.
  await appendFile(path, '2026-01-01T00:00:00.000000000Z stdout F not saved\n');
  await sendLines(id, ['three']);
  engine = await LogEngine.open(options);
  await engine.start(new Map([[id, path]]));
  await engine.flush(id);
  assert.deepEqual(await streams(path), { stdout: 'one\ntwo\nthree\n', stderr: 'oops\n' });

  // Forgotten: later lines are dropped and a deleted file is not made again.
  await rm(path);
  await engine.forget(id);
  await sendLines(id, ['after removal']);
  await engine.flush(id).catch(() => undefined);
  assert.equal(existsSync(path), false);
  await engine.stop();
});

test('stop returns while the state cannot be saved, and leaves the saved state as it was', async (t) => {
  await ensureJournald();
  const dir = await mkdtemp(join(tmpdir(), 'logs-svc-'));
  t.after(() => rm(dir, { recursive: true, force: true }));
  const id = randomBytes(32).toString('hex');
  const stateDir = join(dir, 'state');
  const engine = await LogEngine.open({ stateDir, journalctl: '/usr/bin/journalctl', log: createLogger('logs-svc-test', 'fatal'), barrierTimeoutMs: 20_000, sender });
  await engine.start(new Map([[id, join(dir, 'pod', 'c.log')]]));
  try {
    await rename(stateDir, join(dir, 'state-moved-away'));
    // The next batch read (this line's, or any entry before it) cannot be saved, and is retried.
    await sendLines(id, ['after the state went away']);
    for (let i = 0; i < 200 && engine.status().stateError === undefined; i++) await setTimeout(50);
    assert.match(engine.status().stateError ?? '', /ENOENT/);
  } finally {
    const stopped = await Promise.race([engine.stop().then(() => true), setTimeout(10_000, false, { ref: false })]);
    assert.ok(stopped, 'stop returned');
  }
  assert.equal(existsSync(stateDir), false, 'nothing was saved');
});

test("a state that cannot be saved holds no output back from its file; once it can, it is saved with the files' sizes", async (t) => {
  await ensureJournald();
  const dir = await mkdtemp(join(tmpdir(), 'logs-svc-'));
  const id = randomBytes(32).toString('hex');
  const stateDir = join(dir, 'state');
  const path = join(dir, 'pod', 'c.log');
  const engine = await LogEngine.open({ stateDir, journalctl: '/usr/bin/journalctl', log: createLogger('logs-svc-test', 'fatal'), barrierTimeoutMs: 10_000, sender });
  t.after(async () => {
    await engine.stop();
    await rm(dir, { recursive: true, force: true });
  });
  await engine.start(new Map([[id, path]]));
  await rename(stateDir, join(dir, 'state-moved-away'));
  await sendLines(id, ['while the state cannot be saved']);
  for (let i = 0; i < 200 && engine.status().stateError === undefined; i++) await setTimeout(50);
  assert.match(engine.status().stateError ?? '', /ENOENT/);
  // The saver retries every second; the lines of later batches go on reaching the file meanwhile.
  await sendLines(id, ['and after it']);
  await engine.flush(id);
  assert.deepEqual(await streams(path), { stdout: 'while the state cannot be saved\nand after it\n', stderr: '' });

  await rename(join(dir, 'state-moved-away'), stateDir);
  for (let i = 0; i < 200 && engine.status().stateError !== undefined; i++) await setTimeout(50);
  assert.equal(engine.status().stateError, undefined);
  await engine.stop();
  const saved = JSON.parse(await readFile(join(stateDir, 'state.json'), 'utf8')) as { containers: Record<string, { size: number }> };
  assert.equal(saved.containers[id]?.size, (await stat(path)).size, 'the saved size is the whole file');
});

test('once the spawn helper runs, it sends the barriers: logger(1) sends only the first', async (t) => {
  await ensureJournald();
  const dir = await mkdtemp(join(tmpdir(), 'logs-svc-'));
  const helper = new SpawnServer();
  t.after(async () => {
    helper.close();
    await rm(dir, { recursive: true, force: true });
  });
  const id = randomBytes(32).toString('hex');
  const path = join(dir, 'pod', 'c.log');
  const runs = join(dir, 'logger-runs');
  const logger = join(dir, 'logger');
  await writeFile(logger, `#!/bin/sh\necho run >> ${runs}\nexec /usr/bin/logger --journald\n`);
  await chmod(logger, 0o755);
  const engine = await LogEngine.open({ stateDir: join(dir, 'state'), journalctl: '/usr/bin/journalctl', log, barrierTimeoutMs: 20_000, sender, logger, barrierHelper: helper });
  try {
    await engine.start(new Map([[id, path]]));
    for (const line of ['one', 'two', 'three']) {
      await sendLines(id, [line]);
      await engine.flush(id);
    }
    assert.deepEqual(await streams(path), { stdout: 'one\ntwo\nthree\n', stderr: '' });
    assert.equal(await readFile(runs, 'utf8'), 'run\n', 'logger ran for the first barrier only');
    assert.ok(helper.helperPid !== undefined, 'the helper runs');
  } finally {
    await engine.stop();
  }
});

test("a line forged by another user for a container never reaches its log; the sender's lines do", async (t) => {
  await ensureJournald();
  const dir = await mkdtemp(join(tmpdir(), 'logs-svc-'));
  t.after(() => rm(dir, { recursive: true, force: true }));
  const id = randomBytes(32).toString('hex');
  const path = join(dir, 'pod', 'c.log');
  const engine = await LogEngine.open({ stateDir: join(dir, 'state'), journalctl: '/usr/bin/journalctl', log, barrierTimeoutMs: 20_000, sender });
  try {
    await engine.start(new Map([[id, path]]));
    await sendLines(id, ['real one']);
    await engine.flush(id);
    // Other containers' output on this journal (conmon's, untrusted here) may be counted too.
    const before = engine.status().untrusted.total;
    await sendLines(id, ['forged by nobody'], 6, AS_NOBODY);
    await sendLines(id, ['real two']);
    await engine.flush(id);
    assert.deepEqual(await streams(path), { stdout: 'real one\nreal two\n', stderr: '' });
    assert.ok(engine.status().untrusted.total > before, 'the dropped entry is counted');
  } finally {
    await engine.stop();
  }
});

test('a flush waits for the barrier logs-svc sent itself: a copy from another process or user does not end it', async (t) => {
  await ensureJournald();
  const dir = await mkdtemp(join(tmpdir(), 'logs-svc-'));
  t.after(() => rm(dir, { recursive: true, force: true }));
  const id = randomBytes(32).toString('hex');
  // Stand-ins for logger(1) that pass the barrier on as someone else: the same pid as another
  // user, or root from another pid.
  const wrappers = {
    'another user': `#!/bin/sh\nexec ${AS_NOBODY.join(' ')} /usr/bin/logger --journald\n`,
    'another process': '#!/bin/sh\n/usr/bin/logger --journald\n',
  };
  for (const [what, script] of Object.entries(wrappers)) {
    const logger = join(dir, `logger-${what.replace(' ', '-')}`);
    await writeFile(logger, script);
    await chmod(logger, 0o755);
    const engine = await LogEngine.open({ stateDir: join(dir, `state-${what}`), journalctl: '/usr/bin/journalctl', log, barrierTimeoutMs: 3000, sender, logger });
    try {
      await engine.start(new Map([[id, join(dir, 'pod', 'c.log')]]));
      await assert.rejects(engine.flush(id), BarrierTimeout, what);
    } finally {
      await engine.stop();
    }
  }
});

test('a barrier sender slower than the timeout: the flush fails with BarrierTimeout, and nothing rejects unawaited', async (t) => {
  await ensureJournald();
  const dir = await mkdtemp(join(tmpdir(), 'logs-svc-'));
  t.after(() => rm(dir, { recursive: true, force: true }));
  const unawaited: unknown[] = [];
  const onUnhandled = (reason: unknown): void => void unawaited.push(reason);
  process.on('unhandledRejection', onUnhandled);
  t.after(() => process.off('unhandledRejection', onUnhandled));
  // A logger(1) held up as one is on a stalled machine.
  const logger = join(dir, 'logger-slow');
  await writeFile(logger, '#!/bin/sh\nsleep 1.5\nexec /usr/bin/logger --journald\n');
  await chmod(logger, 0o755);
  const id = randomBytes(32).toString('hex');
  const engine = await LogEngine.open({ stateDir: join(dir, 'state'), journalctl: '/usr/bin/journalctl', log, barrierTimeoutMs: 200, sender, logger });
  try {
    await engine.start(new Map([[id, join(dir, 'pod', 'c.log')]]));
    await assert.rejects(engine.flush(id), BarrierTimeout);
    await setTimeout(200);
    assert.deepEqual(unawaited, [], 'the timeout rejected a promise nothing awaited: logs-svc would exit');
  } finally {
    await engine.stop();
  }
});

test('a container tracked keeps the journal reader awake for its first lines', async (t) => {
  const dir = await mkdtemp(join(tmpdir(), 'logs-svc-'));
  t.after(() => rm(dir, { recursive: true, force: true }));
  const asked: number[] = [];
  class RecordingWakeup extends JournalWakeup {
    override keepAwakeFor(ms: number): void {
      asked.push(ms);
    }
  }
  const wakeup = new RecordingWakeup([join(dir, 'no-journal')]);
  const engine = await LogEngine.open({ stateDir: join(dir, 'state'), journalctl: '/usr/bin/journalctl', log, barrierTimeoutMs: 20_000, sender, wakeup });
  try {
    await engine.track(randomBytes(32).toString('hex'), join(dir, 'pod', 'c.log'));
    assert.equal(asked.length, 1, 'woken once for the new container');
    assert.ok(asked[0]! >= 1_000, `for long enough to cover its start (${asked[0]} ms)`);
  } finally {
    await engine.stop();
  }
});

/** A second container's line flushed: the follower has passed every entry sent before. */
async function followerPassed(engine: LogEngine, dir: string): Promise<void> {
  const witness = randomBytes(32).toString('hex');
  await engine.track(witness, join(dir, 'pod', `${witness.slice(0, 8)}.log`));
  await sendLines(witness, ['witness']);
  await engine.flush(witness);
}

test('a container followed late is read back from the journal: every line once, in order; what came while nobody followed it is counted', async (t) => {
  await ensureJournald();
  const dir = await mkdtemp(join(tmpdir(), 'logs-svc-'));
  const id = randomBytes(32).toString('hex');
  const path = join(dir, 'pod', 'c.log');
  const engine = await LogEngine.open({ stateDir: join(dir, 'state'), journalctl: '/usr/bin/journalctl', log, barrierTimeoutMs: 20_000, sender });
  t.after(async () => {
    await engine.stop();
    await rm(dir, { recursive: true, force: true });
  });
  await engine.start(new Map());
  // Entries of earlier tests from the second before the start are read first.
  await followerPassed(engine, dir);
  const before = engine.status().unknown.total;
  await sendLines(id, ['one', 'two']);
  await sendLines(id, ['oops'], 3);
  // The follower reads past them (and the saved cursor moves past them) while nobody follows the container.
  await followerPassed(engine, dir);
  assert.equal(engine.status().unknown.total - before, 3);
  assert.equal(engine.status().unknown.last, id);
  await engine.track(id, path, { readBack: true });
  await sendLines(id, ['three']);
  await engine.flush(id);
  assert.deepEqual(await streams(path), { stdout: 'one\ntwo\nthree\n', stderr: 'oops\n' });
  assert.equal(engine.status().unknown.total - before, 3, 'nothing more is counted once it is followed');
});

test('a logs-svc killed while it read a container back cuts the file back and reads it back again at its start', async (t) => {
  await ensureJournald();
  const dir = await mkdtemp(join(tmpdir(), 'logs-svc-'));
  t.after(() => rm(dir, { recursive: true, force: true }));
  const id = randomBytes(32).toString('hex');
  const path = join(dir, 'pod', 'c.log');
  const options = { stateDir: join(dir, 'state'), journalctl: '/usr/bin/journalctl', log, barrierTimeoutMs: 20_000, sender };
  let engine = await LogEngine.open(options);
  await engine.start(new Map());
  await sendLines(id, ['one', 'two']);
  await followerPassed(engine, dir);
  await engine.stop();
  // What a kill in the middle of the read back leaves: the mark saved with the file still empty, and
  // a part of the lines written.
  await writeFile(path, '2026-01-01T00:00:00.000000000Z stdout F one\n');
  const stateFile = join(dir, 'state', 'state.json');
  const state = JSON.parse(await readFile(stateFile, 'utf8')) as { cursor: string; containers: Record<string, unknown> };
  state.containers[id] = { path, inode: (await stat(path)).ino, size: 0, readBackUntil: { cursor: state.cursor } };
  await writeFile(stateFile, JSON.stringify(state));
  await sendLines(id, ['three']);
  engine = await LogEngine.open(options);
  try {
    await engine.start(new Map([[id, path]]));
    await engine.flush(id);
    assert.deepEqual(await streams(path), { stdout: 'one\ntwo\nthree\n', stderr: '' });
    assert.equal(JSON.stringify(engine.status()).includes('readBack'), false);
  } finally {
    await engine.stop();
  }
  const saved = JSON.parse(await readFile(stateFile, 'utf8')) as { containers: Record<string, { readBackUntil?: unknown }> };
  assert.equal(saved.containers[id]?.readBackUntil, undefined, 'the mark is cleared once the lines are synced');
});
