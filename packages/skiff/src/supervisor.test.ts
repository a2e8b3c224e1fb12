import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { isProcessAlive, pollUntil } from '@skiff/common/core';
import { SUPERVISOR_SCRIPT } from './paths.js';

/** bin/skiff-supervisor on a plan of its own (one service running `script`, with `environment` added), as `skiff up --plan` would print it. */
async function superviseOne(
  dir: string,
  script: string,
  environment: readonly string[] = [],
  supervisorEnvironment: Record<string, string> = {},
): Promise<{ child: ReturnType<typeof spawn>; lines: string[]; pidFile: string; exited: Promise<number | null> }> {
  const entry = join(dir, 'service.mjs');
  await writeFile(entry, script);
  const pidFile = join(dir, 'service.pid');
  const plan = join(dir, 'plan');
  await writeFile(plan, ['level\t30', `pidfile\t${join(dir, 'skiff.pid')}`, `fifo\t${join(dir, 'supervisor.stdin')}`, ...environment.map((e) => `env\tsvc\t${e}`), ['service', 'svc', pidFile, process.execPath, entry].join('\t'), ''].join('\n'));
  const child = spawn(SUPERVISOR_SCRIPT, [], { stdio: ['ignore', 'pipe', 'inherit'], env: { ...process.env, ...supervisorEnvironment, SKIFF_SUPERVISOR_PLAN: plan } });
  const lines: string[] = [];
  let rest = '';
  child.stdout!.on('data', (chunk: Buffer) => {
    const parts = (rest + chunk.toString()).split('\n');
    rest = parts.pop()!;
    lines.push(...parts);
  });
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  return { child, lines, pidFile, exited };
}

async function tempDir(t: { after(fn: () => Promise<void>): void }): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'skiff-supervisor-'));
  t.after(() => rm(dir, { recursive: true, force: true }));
  return dir;
}

test('a service that keeps dying at once is restarted after 0.2, 0.4, 0.8 and 1.6 s; SIGTERM ends the supervisor', async (t) => {
  const dir = await tempDir(t);
  const starts: number[] = [];
  const { child, lines, exited } = await superviseOne(dir, "console.log('started'); process.exit(1);\n");
  await pollUntil(async () => {
    while (lines.length > 0) if (lines.shift() === 'started') starts.push(performance.now());
    return starts.length >= 5 ? true : undefined;
  }, 30_000, 5);
  child.kill('SIGTERM');
  assert.equal(await exited, 0);
  // Each gap holds the backoff delay plus an exit and a node start.
  const gaps = starts.slice(1).map((at, i) => at - starts[i]!);
  [200, 400, 800, 1600].forEach((delay, i) => assert.ok(gaps[i]! >= delay - 5, `restart ${i + 1} came after ${Math.round(gaps[i]!)} ms, not ${delay}`));
});

test('SIGTERM stops the services; a service knows it is supervised and how often it was restarted', async (t) => {
  const dir = await tempDir(t);
  const service = `console.log('restarts=' + process.env.SKIFF_SERVICE_RESTARTS + ' supervised=' + process.env.SKIFF_SUPERVISED);
process.on('SIGTERM', () => { console.log('stopping'); process.exit(0); });
setInterval(() => {}, 1e9);
`;
  const { child, lines, pidFile, exited } = await superviseOne(dir, service);
  const first = await pollUntil(async () => (lines.includes('restarts=0 supervised=1') ? Number(await readFile(pidFile, 'utf8').catch(() => '')) || undefined : undefined), 30_000, 20);
  assert.ok(first !== undefined);
  process.kill(first, 'SIGKILL');
  await pollUntil(async () => (lines.includes('restarts=1 supervised=1') ? true : undefined), 30_000, 20);
  assert.ok(lines.some((l) => l.includes('"msg":"service exited; restarting"') && l.includes('"signal":9')));
  const second = Number(await readFile(pidFile, 'utf8'));
  assert.notEqual(second, first);
  child.kill('SIGTERM');
  assert.equal(await exited, 0);
  assert.ok(lines.includes('stopping'), 'the service was sent SIGTERM');
  assert.ok(!isProcessAlive(second));
  await assert.rejects(readFile(pidFile), 'the pid file is removed');
});

test('a service gets the environment its plan names, and its pid file names the service itself', async (t) => {
  const dir = await tempDir(t);
  const service = "console.log(`pid=${process.pid} a=${process.env.SKIFF_TEST_A} b=${process.env.SKIFF_TEST_B}`); setInterval(() => {}, 1e9);\n";
  const { child, lines, pidFile, exited } = await superviseOne(dir, service, ['SKIFF_TEST_A=131072', 'SKIFF_TEST_B=two words']);
  try {
    const pid = await pollUntil(async () => Number(await readFile(pidFile, 'utf8').catch(() => '')) || undefined, 30_000, 20);
    await pollUntil(async () => (lines.some((l) => l.startsWith('pid=')) ? true : undefined), 30_000, 20);
    assert.ok(lines.includes(`pid=${pid} a=131072 b=two words`), lines.join('\n'));
  } finally {
    child.kill('SIGTERM');
  }
  assert.equal(await exited, 0);
});

test('a service stops when the supervisor is SIGKILLed: its stdin reaches end-of-file', async (t) => {
  const dir = await tempDir(t);
  const service = "process.stdin.on('end', () => process.exit(0)).resume(); setInterval(() => {}, 1e9);\n";
  const { child, pidFile, exited } = await superviseOne(dir, service);
  const pid = await pollUntil(async () => Number(await readFile(pidFile, 'utf8').catch(() => '')) || undefined, 30_000, 20);
  assert.ok(pid !== undefined);
  child.kill('SIGKILL');
  await exited;
  assert.equal(await pollUntil(async () => (isProcessAlive(pid) ? undefined : true), 10_000, 20), true, 'the service ended with its supervisor');
});

test('with nobody reading its output, SIGTERM still stops the services and removes their pid files', async (t) => {
  const dir = await tempDir(t);
  const { child, pidFile, exited } = await superviseOne(dir, "process.on('SIGTERM', () => { console.log('stopping'); process.exit(0); }); setInterval(() => {}, 1e9);\n");
  const pid = await pollUntil(async () => Number(await readFile(pidFile, 'utf8').catch(() => '')) || undefined, 30_000, 20);
  assert.ok(pid !== undefined);
  child.stdout!.destroy();
  child.kill('SIGTERM');
  assert.equal(await exited, 0);
  assert.ok(!isProcessAlive(pid));
  await assert.rejects(readFile(pidFile), 'the pid file is removed');
});

test('a SIGTERM that comes after the main loop looked at it and before its wait began still stops the supervisor, within seconds', async (t) => {
  const dir = await tempDir(t);
  const { child, lines, pidFile, exited } = await superviseOne(dir, "process.on('SIGTERM', () => process.exit(0)); setInterval(() => {}, 1e9);\n", [], { SKIFF_SUPERVISOR_TEST_GAP_S: '1' });
  await pollUntil(async () => (lines.some((l) => l.includes('"msg":"skiff is up"')) ? true : undefined), 30_000, 5);
  // Inside the gap: its trap runs once the gap is over, right before the wait.
  await new Promise((resolve) => setTimeout(resolve, 300));
  child.kill('SIGTERM');
  const ended = await Promise.race([exited, new Promise((resolve) => setTimeout(() => resolve('still running'), 10_000))]);
  if (ended === 'still running') {
    // The service keeps the test's pipe open: it goes too.
    const service = Number(await readFile(pidFile, 'utf8').catch(() => ''));
    child.kill('SIGKILL');
    if (service > 0) process.kill(service, 'SIGKILL');
  }
  assert.equal(ended, 0, 'the supervisor stopped at SIGTERM');
});
