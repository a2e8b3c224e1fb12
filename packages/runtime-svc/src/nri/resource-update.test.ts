import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { cri, nri } from '@skiff/proto';
import { NriUpdateUnsupportedError, updatedCriResources } from './resource-update.js';

const none: nri.LinuxResources__Output = { memory: null, cpu: null, hugepage_limits: [], blockio_class: null, rdt_class: null, unified: {}, devices: [], pids: null };
const current: cri.LinuxContainerResources__Output = {
  cpu_period: '100000',
  cpu_quota: '50000',
  cpu_shares: '512',
  memory_limit_in_bytes: '67108864',
  oom_score_adj: '0',
  cpuset_cpus: '0',
  cpuset_mems: '',
  hugepage_limits: [{ page_size: '2MB', limit: '0' }],
  unified: {},
  memory_swap_limit_in_bytes: '67108864',
};
const optional = (value: string): { value: string } => ({ value });

test('the fields an update sets replace the current ones; the rest stay', () => {
  const memory = { limit: optional('134217728'), reservation: null, swap: optional('268435456'), kernel: null, kernel_tcp: null, swappiness: null, disable_oom_killer: null, use_hierarchy: null };
  const updated = updatedCriResources(current, { ...none, memory });
  assert.deepEqual(updated, { ...current, memory_limit_in_bytes: '134217728', memory_swap_limit_in_bytes: '268435456' });
  assert.equal(current.memory_limit_in_bytes, '67108864');
});

test('CPU, cpuset, hugepage and unified settings map onto the CRI fields; a hugepage size already limited is replaced', () => {
  const cpu = { shares: optional('2048'), quota: optional('-1'), period: optional('200000'), realtime_runtime: null, realtime_period: null, cpus: '1-2', mems: '0' };
  const updated = updatedCriResources(current, { ...none, cpu, hugepage_limits: [{ page_size: '2MB', limit: '4194304' }, { page_size: '1GB', limit: '0' }], unified: { 'memory.high': '1000' } });
  assert.equal(updated.cpu_shares, '2048');
  assert.equal(updated.cpu_quota, '-1');
  assert.equal(updated.cpu_period, '200000');
  assert.equal(updated.cpuset_cpus, '1-2');
  assert.equal(updated.cpuset_mems, '0');
  assert.deepEqual(updated.hugepage_limits, [{ page_size: '2MB', limit: '4194304' }, { page_size: '1GB', limit: '0' }]);
  assert.deepEqual(updated.unified, { 'memory.high': '1000' });
  assert.equal(updated.memory_limit_in_bytes, current.memory_limit_in_bytes);
});

test('a container without recorded resources gets only what the update sets', () => {
  const memory = { limit: optional('1048576'), reservation: null, swap: null, kernel: null, kernel_tcp: null, swappiness: null, disable_oom_killer: null, use_hierarchy: null };
  const updated = updatedCriResources(null, { ...none, memory });
  assert.equal(updated.memory_limit_in_bytes, '1048576');
  assert.equal(updated.cpu_shares, '0');
  assert.deepEqual(updated.hugepage_limits, []);
});

test('what UpdateContainerResources cannot change is refused, every such field named', () => {
  assert.throws(
    () => updatedCriResources(current, { ...none, blockio_class: optional('slow'), rdt_class: optional('gold'), pids: { limit: '100' } }),
    (err: Error) => err instanceof NriUpdateUnsupportedError && /block I\/O class, the RDT class, the pids limit/.test(err.message),
  );
  const memory = { limit: null, reservation: optional('1'), swap: null, kernel: null, kernel_tcp: null, swappiness: null, disable_oom_killer: { value: true }, use_hierarchy: null };
  assert.throws(() => updatedCriResources(current, { ...none, memory }), /memory reservation, the OOM killer setting/);
});
