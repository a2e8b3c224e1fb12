import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { chainIds } from './chain-id.js';

const d = (n: number): string => `sha256:${String(n).repeat(64).slice(0, 64)}`;
const sha = (text: string): string => `sha256:${createHash('sha256').update(text).digest('hex')}`;

test('chainIds follows the OCI rule', () => {
  assert.deepEqual(chainIds([]), []);
  assert.deepEqual(chainIds([d(1)]), [d(1)]);
  const c1 = sha(`${d(1)} ${d(2)}`);
  const c2 = sha(`${c1} ${d(3)}`);
  assert.deepEqual(chainIds([d(1), d(2), d(3)]), [d(1), c1, c2]);
});

test('chainIds matches a value computed outside Node', () => {
  // printf '%s %s' $a $b | sha256sum
  const a = 'sha256:a1b2c3d4e5f60718293a4b5c6d7e8f90a1b2c3d4e5f60718293a4b5c6d7e8f90';
  const b = 'sha256:0f1e2d3c4b5a69788796a5b4c3d2e1f00f1e2d3c4b5a69788796a5b4c3d2e1f0';
  assert.equal(chainIds([a, b])[1], 'sha256:178723df18be0407ee9c24d030250514ca9731ac48e6cfc047826d7d48e56cf7');
});
