import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { inUnitContext } from '../daemon/unit-context.js';
import { sandboxRecordFixture } from '../state/record-fixtures.js';
import { buildSandboxSpec } from './sandbox-container.js';

const RUNSC = { name: 'runsc', runtime_path: '/usr/bin/runsc', runtime_args: [], runtime_root: '', kind: 'sandbox' as const };

describe('the pause container spec', () => {
  it('holds no capability under runc, and only CAP_NET_BIND_SERVICE under runsc, whose sandbox makes the pod\'s binds on the host', async () => {
    await inUnitContext({ runtime: { handlers: [RUNSC] } }, async (u) => {
      const capabilities = (handler: string): string[] | undefined => {
        const rec = sandboxRecordFixture(`pause-${handler || 'runc'}`, 'ready', { runtimeHandler: handler });
        const spec = buildSandboxSpec(u.ctx, rec, u.ctx.paths.sandbox(rec.id), '/proc/self/ns/net', { kind: 'unconfined' });
        return spec.process.capabilities?.bounding;
      };
      assert.deepEqual(capabilities(''), []);
      assert.deepEqual(capabilities('runsc'), ['CAP_NET_BIND_SERVICE']);
    });
  });
});
