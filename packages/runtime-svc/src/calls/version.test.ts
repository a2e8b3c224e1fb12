import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { inUnitContext } from '../daemon/unit-context.js';
import { CRI_VERSION, RUNTIME_API_VERSION, RUNTIME_NAME, versionCall } from './version.js';

describe('Version', () => {
  it('names skiff and runtime.v1, with the default runtime as build metadata of its version', async () => {
    await inUnitContext(async (u) => {
      assert.deepEqual(versionCall(u.ctx), { version: CRI_VERSION, runtime_name: RUNTIME_NAME, runtime_version: '0.1.0', runtime_api_version: RUNTIME_API_VERSION });
      assert.deepEqual([RUNTIME_NAME, RUNTIME_API_VERSION], ['skiff', 'v1']);
      u.ctx.runtimeVersions = [{ handler: '', kind: 'oci', path: '/usr/local/sbin/runc', name: 'runc', version: '1.4.3', outdated: false }];
      assert.equal(versionCall(u.ctx).runtime_version, '0.1.0+runc.1.4.3');
    });
  });
});
