/**
 * Every CRI method, RuntimeService and ImageService, called as a hostile client would: an empty
 * request, and requests with every field (nested ones too) set to path-like, absolute, non-UTF-8,
 * NUL-carrying, negative, out-of-range and huge values; then a request past the message size
 * limit. Each answer must be a status the caller can act on (never INTERNAL, UNKNOWN or a hang),
 * the daemons must keep serving others meanwhile without restarting, and once whatever the
 * calls did make is removed nothing may be left on the machine.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';
import { status, type Client, type ServiceError } from '@grpc/grpc-js';
import { callUnary, imageServiceDefinition, MAX_MESSAGE_BYTES, runtimeServiceDefinition } from '@skiff/proto';
import { HOSTILE_VALUES, hostileRequest } from './lib/hostile-requests.js';
import { startRuntimeHarness, type RuntimeHarness } from './lib/runtime-harness.js';

/** What a client may be answered: every status the kubelet or an operator can act on. */
const ACCEPTABLE = new Set([
  status.OK,
  status.INVALID_ARGUMENT,
  status.NOT_FOUND,
  status.ALREADY_EXISTS,
  status.FAILED_PRECONDITION,
  status.OUT_OF_RANGE,
  status.RESOURCE_EXHAUSTED,
  status.UNIMPLEMENTED,
]);
const CALL_TIMEOUT_MS = 30_000;

let h: RuntimeHarness;
let pids: Record<string, number | undefined>;
let servedMeanwhile = 0;
let failedMeanwhile: string[] = [];
let stopServing = false;
let serving: Promise<void>;

type Caller = Client & Record<string, (...args: unknown[]) => unknown>;

/** Calls `method` with `request`; answers the status code and its details. */
function callAny(client: Caller, method: string, descriptor: { responseStream: boolean }, request: unknown): Promise<{ code: status; details: string }> {
  const deadline = Date.now() + CALL_TIMEOUT_MS;
  return new Promise((resolve) => {
    if (!descriptor.responseStream) {
      client[method]!(request, { deadline }, (err: ServiceError | null) => resolve({ code: err?.code ?? status.OK, details: err?.details ?? '' }));
      return;
    }
    // A stream that stays open (events, metrics) is a fine answer: it is cancelled after a moment.
    const stream = client[method]!(request, { deadline }) as NodeJS.EventEmitter & { cancel(): void };
    const timer = setTimeout(() => stream.cancel(), 2000);
    stream.on('data', () => undefined);
    stream.on('error', (err: ServiceError) => {
      clearTimeout(timer);
      resolve({ code: err.code === status.CANCELLED ? status.OK : err.code, details: err.details });
    });
    stream.on('end', () => {
      clearTimeout(timer);
      resolve({ code: status.OK, details: '' });
    });
  });
}

async function keepServing(): Promise<void> {
  while (!stopServing) {
    try {
      await callUnary(h.runtime, 'Version', {}, { timeoutMs: 10_000 });
      await callUnary(h.images, 'ListImages', {}, { timeoutMs: 10_000 });
      servedMeanwhile++;
    } catch (err) {
      failedMeanwhile.push((err as Error).message);
    }
    await sleep(200);
  }
}

before(async () => {
  h = await startRuntimeHarness({ images: ['busybox'] });
  pids = { runtime: await h.skiff.servicePid('runtime-svc'), image: await h.skiff.servicePid('image-svc') };
  serving = keepServing();
});

after(async () => {
  stopServing = true;
  await serving;
  await h?.stop();
});

const services = [
  { name: 'RuntimeService' as const, definition: runtimeServiceDefinition, client: () => h.runtime as unknown as Caller },
  { name: 'ImageService' as const, definition: imageServiceDefinition, client: () => h.images as unknown as Caller },
];

describe('every CRI method with hostile requests', { timeout: 600_000 }, () => {
  for (const service of services) {
    test(`${service.name}: every method answers each hostile request with an actionable status`, async () => {
      const wrong: string[] = [];
      for (const [method, descriptor] of Object.entries(service.definition)) {
        const requests: [string, unknown][] = [['empty', {}], ...Object.entries(HOSTILE_VALUES).map(([name, values]): [string, unknown] => [name, hostileRequest(service.name, method, values)])];
        for (const [variant, request] of requests) {
          const { code, details } = await callAny(service.client(), method, descriptor, request);
          if (!ACCEPTABLE.has(code)) wrong.push(`${method} (${variant}): ${status[code]}: ${details.slice(0, 300)}`);
          else if (details.length > 4096) wrong.push(`${method} (${variant}): a ${details.length}-character message`);
        }
      }
      assert.deepEqual(wrong, []);
    });
  }

  test('a request past the message size limit is refused with RESOURCE_EXHAUSTED', async () => {
    const tooBig = { image: { image: 'x'.repeat(MAX_MESSAGE_BYTES + 1024) } };
    const { code } = await callAny(h.images as unknown as Caller, 'ImageStatus', imageServiceDefinition.ImageStatus, tooBig);
    assert.equal(code, status.RESOURCE_EXHAUSTED);
  });

  test('the daemons kept serving other clients, did not restart, and once what the calls made is removed nothing is left', async () => {
    stopServing = true;
    await serving;
    assert.deepEqual(failedMeanwhile, []);
    assert.ok(servedMeanwhile > 0);
    assert.equal(await h.skiff.servicePid('runtime-svc'), pids['runtime']);
    assert.equal(await h.skiff.servicePid('image-svc'), pids['image']);

    const { items } = await callUnary(h.runtime, 'ListPodSandbox', {}, { timeoutMs: 10_000 });
    for (const pod of items) await callUnary(h.runtime, 'RemovePodSandbox', { pod_sandbox_id: pod.id }, { timeoutMs: 60_000 });
    const { containers } = await callUnary(h.runtime, 'ListContainers', {}, { timeoutMs: 10_000 });
    for (const c of containers) await callUnary(h.runtime, 'RemoveContainer', { container_id: c.id }, { timeoutMs: 60_000 });
    assert.deepEqual(await h.settledInventory(), { mounts: [], netns: [], runc: [], monitors: [], cgroups: [], ipOwners: {}, natRuleOwners: [], sandboxDirs: [], containerDirs: [], cniResults: [] });
    const { images } = await callUnary(h.images, 'ListImages', {}, { timeoutMs: 10_000 });
    assert.deepEqual(
      images.flatMap((i) => i.repo_tags),
      [h.imageRef('busybox')],
      'no hostile request pulled an image',
    );
  });
});
