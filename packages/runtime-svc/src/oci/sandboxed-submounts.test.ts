import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import type { MountEntry } from '../mounts/mountinfo.js';
import { withSubmountsOfReadonlyBinds } from './sandboxed-submounts.js';

function entry(point: string, readonly = false): MountEntry {
  return { id: 0, parentId: 0, root: '/', point, optional: [], readonly };
}

const TABLE = [entry('/'), entry('/data'), entry('/data/cache'), entry('/data/cache/ro', true), entry('/database'), entry('/other/x')];

describe('the host submounts of a read-only bind under runsc', () => {
  it('are bound after it, each writable unless read-only on the host', () => {
    const bind = { destination: '/mnt', type: 'bind', source: '/data/', options: ['rbind', 'rprivate', 'ro'] };
    assert.deepEqual(withSubmountsOfReadonlyBinds([bind], TABLE), [
      bind,
      { destination: '/mnt/cache', type: 'bind', source: '/data/cache', options: ['rbind', 'rprivate', 'rw'] },
      { destination: '/mnt/cache/ro', type: 'bind', source: '/data/cache/ro', options: ['rbind', 'rprivate', 'ro'] },
    ]);
  });

  it('leave writable and recursively read-only binds and other mounts as they are', () => {
    const mounts = [
      { destination: '/rw', type: 'bind', source: '/data', options: ['rbind', 'rprivate', 'rw'] },
      { destination: '/rro', type: 'bind', source: '/data', options: ['rbind', 'rprivate', 'ro', 'rro'] },
      { destination: '/proc', type: 'proc', source: 'proc', options: ['ro'] },
    ];
    assert.deepEqual(withSubmountsOfReadonlyBinds(mounts, TABLE), mounts);
  });

  it('of the root are every other mount point', () => {
    const bind = { destination: '/host', type: 'bind', source: '/', options: ['rbind', 'ro'] };
    assert.deepEqual(withSubmountsOfReadonlyBinds([bind], [entry('/'), entry('/data')]).slice(1), [{ destination: '/host/data', type: 'bind', source: '/data', options: ['rbind', 'rprivate', 'rw'] }]);
  });

  it('take the topmost of a mount point mounted twice', () => {
    const bind = { destination: '/mnt', type: 'bind', source: '/data', options: ['rbind', 'ro'] };
    const out = withSubmountsOfReadonlyBinds([bind], [entry('/data/cache', true), entry('/data/cache')]);
    assert.deepEqual(out.slice(1), [{ destination: '/mnt/cache', type: 'bind', source: '/data/cache', options: ['rbind', 'rprivate', 'rw'] }]);
  });
});
