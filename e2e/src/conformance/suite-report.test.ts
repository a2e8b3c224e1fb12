import assert from 'node:assert/strict';
import { test } from 'node:test';
import { selectedSpecNames, suiteFigures, summaryLine } from './suite-report.js';

function spec(leaf: string, state: string, message = '', type = 'It'): object {
  return { ContainerHierarchyTexts: ['[sig-node] Pods'], LeafNodeType: type, LeafNodeText: leaf, State: state, Failure: { Message: message } };
}

test('counts the specs the run selected: passed, failed in any way, skipped with a reason', () => {
  const report = [
    {
      SpecReports: [
        spec('', 'passed', '', 'SynchronizedBeforeSuite'),
        spec('a', 'passed'),
        spec('b', 'failed', 'expected 1 to equal 2'),
        spec('c', 'timedout', 'timed out'),
        spec('d', 'skipped', 'requires systemd'),
        spec('e', 'skipped'),
        spec('f', 'pending'),
        spec('g', 'passed'),
      ],
    },
  ];
  const figures = suiteFigures(JSON.stringify(report));
  assert.deepEqual([figures.passed, figures.failed, figures.skipped], [2, 2, 1]);
  assert.deepEqual(
    figures.failures.map((f) => [f.name, f.state]),
    [
      ['[sig-node] Pods b', 'failed'],
      ['[sig-node] Pods c', 'timedout'],
    ],
  );
  assert.equal(figures.skips[0]?.message, 'requires systemd');
  assert.equal(summaryLine(figures), 'node-conformance: 2 passed, 2 failed, 1 skipped');
  assert.equal(summaryLine(figures, 'critest'), 'critest: 2 passed, 2 failed, 1 skipped');
});

test('a failed suite setup is a failure, though no spec ran', () => {
  const report = [{ SpecReports: [{ LeafNodeType: 'SynchronizedBeforeSuite', State: 'failed', Failure: { Message: 'system validation' } }, spec('a', 'skipped')] }];
  const figures = suiteFigures(JSON.stringify(report));
  assert.deepEqual([figures.passed, figures.failed, figures.skipped], [0, 1, 0]);
  assert.equal(figures.failures[0]?.name, '[SynchronizedBeforeSuite]');
});

test('a dry run selected the specs it reports as passed', () => {
  const report = [{ SpecReports: [spec('a', 'passed'), spec('b', 'skipped'), spec('', 'passed', '', 'SynchronizedBeforeSuite')] }];
  assert.deepEqual(selectedSpecNames(JSON.stringify(report)), ['[sig-node] Pods a']);
});
