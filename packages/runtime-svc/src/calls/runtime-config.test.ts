import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { inUnitContext } from '../daemon/unit-context.js';
import { runtimeConfigCall } from './runtime-config.js';

describe('RuntimeConfig', () => {
  it('reports the cgroup driver in use', async () => {
    await inUnitContext(async (u) => {
      assert.deepEqual(runtimeConfigCall(u.ctx), { linux: { cgroup_driver: 'CGROUPFS' } });
      u.ctx.cgroupDriver = 'systemd';
      assert.deepEqual(runtimeConfigCall(u.ctx), { linux: { cgroup_driver: 'SYSTEMD' } });
    });
  });
});
