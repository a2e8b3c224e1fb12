import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { unitContext } from '../daemon/unit-context.js';
import { runtimeConfigCall } from './runtime-config.js';

describe('RuntimeConfig', () => {
  it('reports the cgroup driver in use', async () => {
    const u = await unitContext();
    try {
      assert.deepEqual(runtimeConfigCall(u.ctx), { linux: { cgroup_driver: 'CGROUPFS' } });
      u.ctx.cgroupDriver = 'systemd';
      assert.deepEqual(runtimeConfigCall(u.ctx), { linux: { cgroup_driver: 'SYSTEMD' } });
    } finally {
      await u.cleanup();
    }
  });
});
