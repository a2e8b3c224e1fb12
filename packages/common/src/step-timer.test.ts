import assert from 'node:assert/strict';
import { test } from 'node:test';
import { readProcStat } from './proc-stat.js';
import { StepTimer } from './step-timer.js';

interface Line {
  op: string;
  outcome: string;
  ms: number;
  steps: Record<string, number>;
  container?: string;
}

/** The two logger methods the timer uses, keeping what is logged at debug level. */
function capture(level: 'debug' | 'info'): { log: ConstructorParameters<typeof StepTimer>[0]; lines: Line[] } {
  const lines: Line[] = [];
  const log = {
    isLevelEnabled: (wanted: string) => level === 'debug' || wanted !== 'debug',
    debug: (fields: object) => void lines.push(fields as Line),
  } as ConstructorParameters<typeof StepTimer>[0];
  return { log, lines };
}

test('steps are logged once with their names, durations and the total', async () => {
  const { log, lines } = capture('debug');
  const timer = new StepTimer(log, 'RemoveContainer', { container: 'c1' });
  await new Promise((r) => setTimeout(r, 20));
  timer.mark('runc delete');
  await Promise.all([timer.time('umount', new Promise((r) => setTimeout(r, 10))), timer.time('rm', Promise.resolve())]);
  timer.mark('after');
  timer.done();
  timer.done();
  assert.equal(lines.length, 1);
  const line = lines[0]!;
  assert.equal(line.op, 'RemoveContainer');
  assert.equal(line.container, 'c1');
  assert.equal(line.outcome, 'ok');
  assert.deepEqual(Object.keys(line.steps).sort(), ['after', 'rm', 'runc delete', 'umount']);
  assert.ok(line.steps['runc delete']! >= 15);
  assert.ok(line.steps['umount']! >= 5);
  assert.ok(line.ms >= line.steps['runc delete']! + line.steps['umount']!);
});

test('a failed timed step still counts, and the outcome is logged', async () => {
  const { log, lines } = capture('debug');
  const timer = new StepTimer(log, 'CreateContainer');
  await assert.rejects(timer.time('mount', Promise.reject(new Error('no'))));
  timer.done('failed');
  assert.equal(lines[0]!.outcome, 'failed');
  assert.ok('mount' in lines[0]!.steps);
});

test('nothing is logged above debug level', () => {
  const { log, lines } = capture('info');
  const timer = new StepTimer(log, 'StartContainer');
  timer.mark('runc start');
  timer.done();
  assert.equal(lines.length, 0);
});

/** Runs a process that marks steps a, b (timed) and c of operation Op, printing each; answers what it printed and how it ended. */
async function markSteps(env: Record<string, string>, whileRunning?: (pid: number, printed: () => string) => Promise<void>): Promise<{ printed: string; signal: NodeJS.Signals | null }> {
  const { spawn } = await import('node:child_process');
  const script = [
    `const { StepTimer } = await import(${JSON.stringify(new URL('./step-timer.js', import.meta.url).href)});`,
    "const t = new StepTimer({ isLevelEnabled: () => false, debug: () => {} }, 'Op');",
    "t.mark('a'); process.stdout.write('a ');",
    "await t.time('b', Promise.resolve()); await new Promise((r) => setImmediate(r)); process.stdout.write('b ');",
    "t.mark('c'); process.stdout.write('c');",
  ].join('\n');
  const child = spawn(process.execPath, ['--input-type=module', '-e', script], { env: { PATH: process.env['PATH'] ?? '', ...env }, stdio: ['ignore', 'pipe', 'inherit'] });
  let printed = '';
  child.stdout.on('data', (c: Buffer) => (printed += c.toString()));
  const closed = new Promise<NodeJS.Signals | null>((resolve) => child.on('close', (_code, sig) => resolve(sig)));
  await whileRunning?.(child.pid!, () => printed);
  const signal = await closed;
  return { printed, signal };
}

test('a kill point: only where SKIFF_TEST_KILL_STEP_FILE names a file naming the step does the process kill itself there, once', async () => {
  const { mkdtemp, writeFile, access, rm } = await import('node:fs/promises');
  const { tmpdir } = await import('node:os');
  const { join } = await import('node:path');
  const dir = await mkdtemp(join(tmpdir(), 'kill-step-'));
  try {
    const file = join(dir, 'step');
    assert.deepEqual(await markSteps({}), { printed: 'a b c', signal: null }, 'inert without the variable');
    await writeFile(file, 'Op:b\n');
    assert.deepEqual(await markSteps({}), { printed: 'a b c', signal: null }, 'a file alone does nothing');
    assert.deepEqual(await markSteps({ SKIFF_TEST_KILL_STEP_FILE: file }), { printed: 'a ', signal: 'SIGKILL' }, 'killed at the end of the timed step b');
    await assert.rejects(access(file), 'the file is consumed');
    await writeFile(file, 'Op:c');
    assert.deepEqual(await markSteps({ SKIFF_TEST_KILL_STEP_FILE: file }), { printed: 'a b ', signal: 'SIGKILL' }, 'killed at c');
    await writeFile(file, 'Other:a');
    assert.deepEqual(await markSteps({ SKIFF_TEST_KILL_STEP_FILE: file }), { printed: 'a b c', signal: null }, 'another operation\'s step is not this one');
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
});

test('a hold point: the process stops itself at the step named with SIGSTOP, and goes on from there at SIGCONT', async () => {
  const { mkdtemp, writeFile, access, rm } = await import('node:fs/promises');
  const { tmpdir } = await import('node:os');
  const { join } = await import('node:path');
  const dir = await mkdtemp(join(tmpdir(), 'kill-step-'));
  try {
    const file = join(dir, 'step');
    await writeFile(file, 'Op:b SIGSTOP');
    const result = await markSteps({ SKIFF_TEST_KILL_STEP_FILE: file }, async (pid, printed) => {
      while (readProcStat(pid)?.state !== 'T' || printed() === '') await new Promise((r) => setTimeout(r, 10));
      assert.equal(printed(), 'a ', 'held at the end of the timed step b');
      process.kill(pid, 'SIGCONT');
    });
    assert.deepEqual(result, { printed: 'a b c', signal: null }, 'went on after SIGCONT');
    await assert.rejects(access(file), 'the file is consumed');
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
});
