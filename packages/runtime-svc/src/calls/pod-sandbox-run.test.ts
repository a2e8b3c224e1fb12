import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { promises as fs } from 'node:fs';
import { status } from '@grpc/grpc-js';
import type { cri } from '@skiff/proto';
import { criRequest, rejectsWithStatus, inUnitContext, type UnitContext } from '../daemon/unit-context.js';
import { podNameKey } from '../state/state-index.js';
import { runPodSandboxCall } from './pod-sandbox-run.js';

const metadata = { name: 'web', namespace: 'default', uid: 'uid-1', attempt: 0 };
const run = (fields: object): cri.RunPodSandboxRequest__Output => criRequest('RunPodSandbox', fields);

/** Nothing of a refused sandbox is left: no directory, no record, no name held. */
async function nothingMade(u: UnitContext): Promise<void> {
  assert.deepEqual(await fs.readdir(u.ctx.paths.sandboxesDir), []);
  assert.equal(u.ctx.state.sandboxes.size, 0);
  assert.equal(u.ctx.state.podNames.holderOf(podNameKey(metadata)), undefined);
}

describe('RunPodSandbox refuses before it makes anything', () => {
  it('a request without config, or metadata missing a field, is InvalidArgument naming the fields', async () => {
    await inUnitContext(async (u) => {
      await rejectsWithStatus(runPodSandboxCall(u.ctx, run({})), status.INVALID_ARGUMENT, /^RunPodSandbox: config is required$/);
      await rejectsWithStatus(runPodSandboxCall(u.ctx, run({ config: {} })), status.INVALID_ARGUMENT, /config\.metadata\.name, namespace, uid is required/);
      await rejectsWithStatus(runPodSandboxCall(u.ctx, run({ config: { metadata: { name: 'web', namespace: 'default' } } })), status.INVALID_ARGUMENT, /config\.metadata\.uid is required/);
      await nothingMade(u);
    });
  });

  it('namespace modes a sandbox cannot have, and a bad host name, are InvalidArgument', async () => {
    await inUnitContext(async (u) => {
      const withNamespaces = (namespace_options: object): cri.RunPodSandboxRequest__Output => run({ config: { metadata, linux: { security_context: { namespace_options } } } });
      await rejectsWithStatus(runPodSandboxCall(u.ctx, withNamespaces({ pid: 'TARGET' })), status.INVALID_ARGUMENT, /pid namespace mode TARGET applies to containers, not sandboxes/);
      await rejectsWithStatus(
        runPodSandboxCall(u.ctx, withNamespaces({ network: 'NODE', userns_options: { mode: 'POD', uids: [{ host_id: 100000, container_id: 0, length: 65536 }], gids: [{ host_id: 100000, container_id: 0, length: 65536 }] } })),
        status.INVALID_ARGUMENT,
        /own user namespace cannot use the host network/,
      );
      await rejectsWithStatus(runPodSandboxCall(u.ctx, run({ config: { metadata, hostname: 'a b' } })), status.INVALID_ARGUMENT, /hostname "a b" is not a valid host name/);
      await rejectsWithStatus(runPodSandboxCall(u.ctx, run({ config: { metadata, hostname: 'a\u0000b' } })), status.INVALID_ARGUMENT, /is not a valid host name/);
      await rejectsWithStatus(runPodSandboxCall(u.ctx, run({ config: { metadata, hostname: 'é'.repeat(40) } })), status.INVALID_ARGUMENT, /at most 64 bytes/);
      await nothingMade(u);
    });
  });

  it('an unknown runtime handler is InvalidArgument naming the handlers there are', async () => {
    await inUnitContext(async (u) => {
      await rejectsWithStatus(runPodSandboxCall(u.ctx, run({ config: { metadata }, runtime_handler: 'nope' })), status.INVALID_ARGUMENT, /runtime handler "nope" is not configured; this node offers: runc/);
      await nothingMade(u);
    });
  });

  it('a pod on the pod network while no CNI network is configured is FailedPrecondition naming the directory', async () => {
    await inUnitContext(async (u) => {
      await rejectsWithStatus(
        runPodSandboxCall(u.ctx, run({ config: { metadata } })),
        status.FAILED_PRECONDITION,
        new RegExp(`no CNI network configuration in ${u.ctx.config.runtime.cni_conf_dir}; install one`),
      );
      await nothingMade(u);
    });
  });

  it('a client already gone is Cancelled, with nothing made and the name free', async () => {
    await inUnitContext(async (u) => {
      const gone = AbortSignal.abort();
      const hostNetwork = run({ config: { metadata, linux: { security_context: { namespace_options: { network: 'NODE' } } } } });
      await rejectsWithStatus(runPodSandboxCall(u.ctx, hostNetwork, gone), status.CANCELLED, /^RunPodSandbox: the client went away .* nothing was done$/);
      await nothingMade(u);
    });
  });
});
