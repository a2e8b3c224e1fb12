import assert from 'node:assert/strict';
import { test } from 'node:test';
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
