import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { rootfsProtection } from './rootfs-protection.js';

describe('root filesystem protection', () => {
  it('keeps nodev on every unprivileged root, read-only ones included', () => {
    assert.deepEqual(rootfsProtection(false, false), { nodev: true, runcReadonly: false, remountReadonlyAfterCreate: false });
    assert.deepEqual(rootfsProtection(false, true), { nodev: true, runcReadonly: false, remountReadonlyAfterCreate: true });
  });

  it('lets a privileged container use device nodes and leaves its read-only root to runc', () => {
    assert.deepEqual(rootfsProtection(true, false), { nodev: false, runcReadonly: false, remountReadonlyAfterCreate: false });
    assert.deepEqual(rootfsProtection(true, true), { nodev: false, runcReadonly: true, remountReadonlyAfterCreate: false });
  });
});
