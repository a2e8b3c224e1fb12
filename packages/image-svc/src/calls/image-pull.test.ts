import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { createServer } from 'node:net';
import { status } from '@grpc/grpc-js';
import { createLogger, StatusError } from '@skiff/common';
import { DaemonMetrics } from '@skiff/common/metrics';
import type { cri } from '@skiff/proto';
import { emptyRegistriesConfig, parseRegistriesConfig, RegistryClient, type RegistriesConfig } from '@skiff/registry';
import { toStatusError } from '../errors.js';
import { Puller } from '../puller.js';
import { PullMetrics } from '../pull-metrics.js';
import { imageRequest, withUnitStore, type UnitStore } from '../unit-store.js';
import { pullImageCall } from './image-pull.js';

const log = createLogger('image-svc', 'fatal');
const pull = (image: string): cri.PullImageRequest__Output => imageRequest('PullImage', { image: { image } });

/** A loopback port nothing listens on. */
async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  await new Promise((resolve) => server.close(resolve));
  return port;
}

function pullerFor(u: UnitStore, registries: RegistriesConfig): Puller {
  return new Puller(u.store, new RegistryClient({ registries, logger: log, timeouts: { connectMs: 5_000, responseMs: 5_000, idleMs: 5_000 } }), log, 1, []);
}

/** The pull's failure as the server answers it, and the failures the metrics counted by reason. */
async function failure(puller: Puller, reference: string): Promise<{ error: StatusError; counted: Record<string, number> }> {
  const metrics = new DaemonMetrics('image-svc');
  const error = await pullImageCall(puller, pull(reference), new AbortController().signal, new PullMetrics(metrics)).then(
    () => assert.fail(`${reference} was pulled`),
    (err: unknown) => toStatusError(err),
  );
  const failures = (await metrics.registry.getSingleMetric('skiff_image_pull_failures_total')?.get())?.values ?? [];
  return { error, counted: Object.fromEntries(failures.map((v) => [String(v.labels['reason']), v.value])) };
}

describe('PullImage', () => {
  it('an empty reference is InvalidArgument, before any pull starts and without counting a failed pull', async () => {
    await withUnitStore(async (u) => {
      const metrics = new DaemonMetrics('image-svc');
      await assert.rejects(
        pullImageCall(pullerFor(u, emptyRegistriesConfig()), pull(''), new AbortController().signal, new PullMetrics(metrics)),
        (err: unknown) => err instanceof StatusError && err.code === status.INVALID_ARGUMENT && /^PullImage: image\.image \(the image reference\) is required$/.test(err.message),
      );
      assert.deepEqual((await metrics.registry.getSingleMetric('skiff_image_pull_failures_total')?.get())?.values, []);
    });
  });

  it('a reference that does not parse is InvalidArgument, counted by that reason', async () => {
    await withUnitStore(async (u) => {
      const { error, counted } = await failure(pullerFor(u, emptyRegistriesConfig()), 'Not A Reference!');
      assert.equal(error.code, status.INVALID_ARGUMENT, error.message);
      assert.deepEqual(counted, { INVALID_ARGUMENT: 1 });
    });
  });

  it('a registry nothing answers on is Unavailable naming it; a blocked one FailedPrecondition; each counted by its reason', async () => {
    await withUnitStore(async (u) => {
      const host = `127.0.0.1:${await closedPort()}`;
      const unreachable = await failure(pullerFor(u, emptyRegistriesConfig()), `${host}/app:1`);
      assert.equal(unreachable.error.code, status.UNAVAILABLE, unreachable.error.message);
      assert.match(unreachable.error.message, new RegExp(host.replace(/\./g, '\\.')));
      assert.deepEqual(unreachable.counted, { UNAVAILABLE: 1 });

      const blocked = await failure(pullerFor(u, parseRegistriesConfig('[[registry]]\nlocation = "blocked.test"\nblocked = true\n')), 'blocked.test/app:1');
      assert.equal(blocked.error.code, status.FAILED_PRECONDITION, blocked.error.message);
      assert.deepEqual(blocked.counted, { FAILED_PRECONDITION: 1 });
      assert.deepEqual(await u.store.list(), [], 'nothing was recorded');
    });
  });
});
