import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { promises as fs } from 'node:fs';
import { status } from '@grpc/grpc-js';
import type { cri } from '@skiff/proto';
import { criRequest, rejectsWithStatus, inUnitContext, type UnitContext } from '../daemon/unit-context.js';
import { toStatusError } from '../errors.js';
import type { SandboxRecord } from '../state/records.js';
import { containerNameKey } from '../state/state-index.js';
import { createContainerCall } from './container-create.js';

const metadata = { name: 'app', attempt: 0 };
const image = { image: 'registry.test/busybox:latest' };
const create = (fields: object): cri.CreateContainerRequest__Output => criRequest('CreateContainer', fields);
const createIn = (sandbox: SandboxRecord, config: object): cri.CreateContainerRequest__Output => create({ pod_sandbox_id: sandbox.id, config: { metadata, image, ...config } });

/** As the server answers: the call's failure through the mapping every call's failures go through. */
function answered(promise: Promise<unknown>): Promise<unknown> {
  return promise.catch((err: unknown) => {
    throw toStatusError(err);
  });
}

/** Nothing of a refused container is left: no directory, no record, no name held. */
async function nothingMade(u: UnitContext, sandbox?: SandboxRecord): Promise<void> {
  assert.deepEqual(await fs.readdir(u.ctx.paths.containersDir), []);
  assert.equal(u.ctx.state.containers.size, 0);
  if (sandbox) assert.equal(u.ctx.state.containerNames.holderOf(containerNameKey(metadata, sandbox.metadata)), undefined);
}

describe('CreateContainer refuses before it makes anything', () => {
  it('a request without config, name, image or sandbox id is InvalidArgument naming what is missing', async () => {
    await inUnitContext(async (u) => {
      await rejectsWithStatus(createContainerCall(u.ctx, create({ pod_sandbox_id: 'a' })), status.INVALID_ARGUMENT, /^CreateContainer: config is required$/);
      await rejectsWithStatus(createContainerCall(u.ctx, create({ pod_sandbox_id: 'a', config: { image } })), status.INVALID_ARGUMENT, /config\.metadata\.name is required/);
      await rejectsWithStatus(createContainerCall(u.ctx, create({ pod_sandbox_id: 'a', config: { metadata } })), status.INVALID_ARGUMENT, /CreateContainer app: config\.image\.image is required/);
      await rejectsWithStatus(createContainerCall(u.ctx, create({ config: { metadata, image } })), status.INVALID_ARGUMENT, /pod_sandbox_id is required/);
      await nothingMade(u);
    });
  });

  it('an unknown sandbox is NotFound, one that is not ready FailedPrecondition', async () => {
    await inUnitContext(async (u) => {
      await rejectsWithStatus(createContainerCall(u.ctx, create({ pod_sandbox_id: 'f'.repeat(64), config: { metadata, image } })), status.NOT_FOUND, /pod sandbox f{64} does not exist/);
      const stopped = await u.addSandbox('stopped');
      await rejectsWithStatus(createContainerCall(u.ctx, createIn(stopped, {})), status.FAILED_PRECONDITION, /is not ready .* containers can only be created in a ready sandbox/);
      await nothingMade(u, stopped);
    });
  });

  it('a privileged container in an unprivileged sandbox, or a PID namespace target that is not a running container of the pod, is refused', async () => {
    await inUnitContext(async (u) => {
      const pod = await u.addSandbox('ready');
      await rejectsWithStatus(createContainerCall(u.ctx, createIn(pod, { linux: { security_context: { privileged: true } } })), status.INVALID_ARGUMENT, /asks to be privileged but its pod sandbox was not created privileged/);
      await rejectsWithStatus(
        createContainerCall(u.ctx, createIn(pod, { linux: { security_context: { namespace_options: { pid: 'TARGET', target_id: 'nothing' } } } })),
        status.NOT_FOUND,
        /target container "nothing" for the PID namespace is not a running container of sandbox/,
      );
      await nothingMade(u, pod);
    });
  });

  it('a log path outside the sandbox\'s log directory is InvalidArgument; one without journald FailedPrecondition', async () => {
    await inUnitContext({ journald: false }, async (u) => {
      const pod = await u.addSandbox('ready', { logDirectory: '/var/log/pods/unit' });
      await rejectsWithStatus(createContainerCall(u.ctx, createIn(pod, { log_path: '../escape.log' })), status.INVALID_ARGUMENT, /log path "\.\.\/escape\.log" leaves the sandbox's log directory/);
      await rejectsWithStatus(createContainerCall(u.ctx, createIn(pod, { log_path: 'a:b.log' })), status.INVALID_ARGUMENT, /contains ':'/);
      await rejectsWithStatus(createContainerCall(u.ctx, createIn(pod, { log_path: 'app/0.log' })), status.FAILED_PRECONDITION, /journald is not running.*\/var\/log\/pods\/unit\/app\/0\.log/);
      await nothingMade(u, pod);
    });
  });

  it('mounts runc would not apply as asked are InvalidArgument naming the mount', async () => {
    await inUnitContext(async (u) => {
      const pod = await u.addSandbox('ready');
      const withMount = (mount: object): cri.CreateContainerRequest__Output => createIn(pod, { mounts: [mount] });
      await rejectsWithStatus(createContainerCall(u.ctx, withMount({ container_path: 'data', host_path: '/tmp' })), status.INVALID_ARGUMENT, /container_path "data" must be an absolute path/);
      await rejectsWithStatus(createContainerCall(u.ctx, withMount({ container_path: '/data', host_path: 'tmp' })), status.INVALID_ARGUMENT, /host_path "tmp" must be an absolute path/);
      await rejectsWithStatus(createContainerCall(u.ctx, withMount({ container_path: '/data', host_path: '/tmp', readonly: true, mount_options: ['rw'] })), status.INVALID_ARGUMENT, /mount_options "rw" contradicts/);
      await rejectsWithStatus(createContainerCall(u.ctx, withMount({ container_path: '/data', host_path: '/tmp', mount_options: ['bogus'] })), status.INVALID_ARGUMENT, /mount_options bogus are not supported/);
      await nothingMade(u, pod);
    });
  });

  it('a CDI device no spec defines is InvalidArgument, an image not in the store NotFound (as the server maps them)', async () => {
    await inUnitContext(async (u) => {
      const pod = await u.addSandbox('ready');
      await rejectsWithStatus(answered(createContainerCall(u.ctx, createIn(pod, { CDI_devices: [{ name: 'vendor.test/gpu=0' }] }))), status.INVALID_ARGUMENT, /CDI device "vendor\.test\/gpu=0" is not defined by any spec/);
      await rejectsWithStatus(answered(createContainerCall(u.ctx, createIn(pod, {}))), status.NOT_FOUND, /image "registry\.test\/busybox:latest" is not in the image store/);
      await nothingMade(u, pod);
    });
  });
});
