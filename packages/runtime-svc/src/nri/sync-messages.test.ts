import assert from 'node:assert/strict';
import { test } from 'node:test';
import { nriMessageType, TTRPC_MAX_PAYLOAD_BYTES, type nri } from '@skiff/proto';
import { NriSyncTooLargeError, SYNC_MESSAGE_BUDGET_BYTES, synchronizeMessages, type SyncMessage } from './sync-messages.js';

const RequestType = nriMessageType('SynchronizeRequest');
const encodedLength = (m: SyncMessage): number => RequestType.encode(RequestType.fromObject(m)).finish().length;

const bigPod = (i: number, bytes: number): nri.PodSandbox => ({ id: `pod${i}`, name: `p${i}`, namespace: 'default', annotations: { blob: String(i % 10).repeat(bytes) } });
const bigContainer = (i: number, bytes: number): nri.Container => ({ id: `c${i}`, pod_sandbox_id: `pod${i}`, name: `c${i}`, labels: { blob: 'x'.repeat(bytes) } });

test('many large pods and containers are split into requests under the limit, "more" on all but the last, in order', () => {
  const pods = Array.from({ length: 12 }, (_, i) => bigPod(i, 700 * 1024));
  const containers = Array.from({ length: 30 }, (_, i) => bigContainer(i, 200 * 1024));
  const messages = synchronizeMessages(pods, containers);
  assert.ok(messages.length >= 4, `${messages.length} requests`);
  assert.ok(SYNC_MESSAGE_BUDGET_BYTES < TTRPC_MAX_PAYLOAD_BYTES);
  for (const m of messages) assert.ok(encodedLength(m) <= SYNC_MESSAGE_BUDGET_BYTES, `a request of ${encodedLength(m)} bytes`);
  assert.deepEqual(messages.map((m) => m.more), [...messages.slice(1).map(() => true), false]);
  assert.deepEqual(messages.flatMap((m) => m.pods.map((p) => p.id)), pods.map((p) => p.id));
  assert.deepEqual(messages.flatMap((m) => m.containers.map((c) => c.id)), containers.map((c) => c.id));
});

test('the sizes are exact: a budget of the whole request sends one, a byte less sends two', () => {
  const pods = Array.from({ length: 3 }, (_, i) => bigPod(i, 300));
  const containers = [bigContainer(0, 200_000)];
  const whole = encodedLength({ pods, containers, more: true });
  assert.equal(synchronizeMessages(pods, containers, whole).length, 1);
  const split = synchronizeMessages(pods, containers, whole - 1);
  assert.equal(split.length, 2);
  for (const m of split) assert.ok(encodedLength(m) <= whole - 1);
});

test('an empty node is one empty request without "more"', () => {
  assert.deepEqual(synchronizeMessages([], []), [{ pods: [], containers: [], more: false }]);
});

test('a pod or container too large for a request alone is refused, named', () => {
  const huge = bigPod(7, TTRPC_MAX_PAYLOAD_BYTES);
  assert.throws(() => synchronizeMessages([bigPod(1, 10), huge], []), (err: Error) => err instanceof NriSyncTooLargeError && /pod default\/p7 \(pod7\) takes \d+ bytes/.test(err.message));
  assert.throws(() => synchronizeMessages([], [bigContainer(3, TTRPC_MAX_PAYLOAD_BYTES)]), (err: Error) => err instanceof NriSyncTooLargeError && /container c3 \(c3\) of pod pod3/.test(err.message));
});
