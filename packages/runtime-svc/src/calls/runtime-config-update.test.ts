import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { status } from '@grpc/grpc-js';
import type { cri } from '@skiff/proto';
import { NetworkSettings } from '../daemon/network-settings.js';
import { criRequest, rejectsWithStatus, inUnitContext } from '../daemon/unit-context.js';
import { updateRuntimeConfigCall } from './runtime-config-update.js';

const withCidr = (pod_cidr: string): cri.UpdateRuntimeConfigRequest__Output => criRequest('UpdateRuntimeConfig', { runtime_config: { network_config: { pod_cidr } } });

describe('UpdateRuntimeConfig', () => {
  it('refuses a pod CIDR that does not parse, naming the field, and keeps the one it had', async () => {
    await inUnitContext(async (u) => {
      await updateRuntimeConfigCall(u.ctx, withCidr('10.244.0.0/24'));
      await rejectsWithStatus(updateRuntimeConfigCall(u.ctx, withCidr('10.244.0.0/33')), status.INVALID_ARGUMENT, /^UpdateRuntimeConfig: pod_cidr: /);
      await rejectsWithStatus(updateRuntimeConfigCall(u.ctx, withCidr('not-a-cidr')), status.INVALID_ARGUMENT, /^UpdateRuntimeConfig: pod_cidr: /);
      assert.deepEqual(u.ctx.network.cidrs, ['10.244.0.0/24']);
    });
  });

  it('keeps the pod CIDR on disk for the next start; an empty one or the same one again changes nothing', async () => {
    await inUnitContext(async (u) => {
      await updateRuntimeConfigCall(u.ctx, withCidr('10.244.0.0/24,fd00:10:244::/64'));
      await updateRuntimeConfigCall(u.ctx, withCidr('10.244.0.0/24,fd00:10:244::/64'));
      await updateRuntimeConfigCall(u.ctx, criRequest('UpdateRuntimeConfig', {}));
      assert.deepEqual(u.ctx.network.cidrs, ['10.244.0.0/24', 'fd00:10:244::/64']);
      assert.deepEqual((await NetworkSettings.load(u.ctx.paths.runtimeConfigFile)).cidrs, ['10.244.0.0/24', 'fd00:10:244::/64']);
    });
  });
});
