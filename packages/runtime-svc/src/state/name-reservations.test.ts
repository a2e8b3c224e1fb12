import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { status } from '@grpc/grpc-js';
import { NameReservations, requestFingerprint, reserveName } from './name-reservations.js';

const A = 'a'.repeat(64);
const B = 'b'.repeat(64);
const C = 'c'.repeat(64);
const KEY = 'web_default_u1_0';

function alreadyExists(holder: string): (err: unknown) => boolean {
  return (err) => (err as { code?: number }).code === status.ALREADY_EXISTS && (err as Error).message.includes(holder);
}

describe('name reservations', () => {
  it('lets an identical request wait for the call in flight, then gives it the object once when the first client had gone', async () => {
    const names = new NameReservations('pod sandbox');
    assert.deepEqual(names.reserve(KEY, A, 'req'), { kind: 'reserved' });
    const retry = names.reserve(KEY, B, 'req');
    assert.equal(retry.kind, 'in-flight');
    assert.throws(() => names.reserve(KEY, B, 'other config'), alreadyExists(A), 'another request for the name is refused at once');
    names.made(KEY, A, true);
    await (retry as { settled: Promise<void> }).settled;
    assert.deepEqual(names.reserve(KEY, B, 'req'), { kind: 'made', id: A });
    assert.throws(() => names.reserve(KEY, C, 'req'), alreadyExists(A), 'the object is handed out once');
    assert.equal(names.holderOf(KEY), A);
  });

  it('refuses an identical request for an object whose maker answered its own client', () => {
    const names = new NameReservations('container');
    names.reserve(KEY, A, 'req');
    names.made(KEY, A, false);
    assert.throws(() => names.reserve(KEY, B, 'req'), (err) => alreadyExists(A)(err) && /container name ".*" is already reserved for container a{64}/.test((err as Error).message));
  });

  it('frees the name when the call fails or the object is removed, and only for its holder', async () => {
    const names = new NameReservations('pod sandbox');
    names.reserve(KEY, A, 'req');
    const retry = names.reserve(KEY, B, 'req') as { settled: Promise<void> };
    names.release(KEY, B);
    assert.equal(names.holderOf(KEY), A, 'a release by another id changes nothing');
    names.release(KEY, A);
    await retry.settled;
    assert.deepEqual(names.reserve(KEY, B, 'req'), { kind: 'reserved' });
    names.made(KEY, B, true);
    names.release(KEY, B);
    assert.deepEqual(names.reserve(KEY, C, 'req'), { kind: 'reserved' }, 'a removed object is not handed out');
  });

  it('holds names read at start-up against every request', () => {
    const names = new NameReservations('pod sandbox');
    names.reserve(KEY, A);
    assert.deepEqual(names.reserve(KEY, A), { kind: 'reserved' });
    assert.throws(() => names.reserve(KEY, B, 'req'), alreadyExists(A));
  });
});

describe('reserveName', () => {
  it('waits for an identical call in flight and answers with what it made for a client that had gone', async () => {
    const names = new NameReservations('pod sandbox');
    const checks: string[] = [];
    assert.equal(await reserveName(names, { key: KEY, id: A, request: 'req', signal: undefined, call: 'RunPodSandbox', onReserved: () => checks.push('reserved A') }), A);
    const waiting = reserveName(names, { key: KEY, id: B, request: 'req', signal: new AbortController().signal, call: 'RunPodSandbox', check: () => checks.push('check B'), onReserved: () => checks.push('reserved B') });
    await new Promise((r) => setImmediate(r));
    names.made(KEY, A, true);
    assert.equal(await waiting, A);
    assert.deepEqual(checks, ['reserved A', 'check B', 'check B'], 'the check runs before each attempt; nothing was reserved for B');
  });

  it('reserves for the waiter when the call in flight failed', async () => {
    const names = new NameReservations('container');
    names.reserve(KEY, A, 'req');
    const waiting = reserveName(names, { key: KEY, id: B, request: 'req', signal: undefined, call: 'CreateContainer' });
    names.release(KEY, A);
    assert.equal(await waiting, B);
    assert.equal(names.holderOf(KEY), B);
  });

  it('stops with CANCELLED and nothing reserved when the waiting client goes, or was gone before', async () => {
    const names = new NameReservations('container');
    names.reserve(KEY, A, 'req');
    const gone = new AbortController();
    const waiting = reserveName(names, { key: KEY, id: B, request: 'req', signal: gone.signal, call: 'CreateContainer' });
    gone.abort();
    await assert.rejects(waiting, (err: Error & { code?: number }) => err.code === status.CANCELLED && /CreateContainer: the client went away/.test(err.message));
    names.release(KEY, A);
    await assert.rejects(reserveName(names, { key: KEY, id: C, request: 'req', signal: gone.signal, call: 'CreateContainer' }), /nothing was done/);
    assert.equal(names.holderOf(KEY), undefined);
  });

  it('lets a failed check refuse the request with nothing reserved', async () => {
    const names = new NameReservations('pod sandbox');
    const refuse = (): void => {
      throw new Error('overlapping ids');
    };
    await assert.rejects(reserveName(names, { key: KEY, id: A, request: 'req', signal: undefined, call: 'RunPodSandbox', check: refuse }), /overlapping ids/);
    assert.equal(names.holderOf(KEY), undefined);
  });
});

describe('requestFingerprint', () => {
  it('is the same whatever order map entries come in, and differs with any value', () => {
    const one = requestFingerprint({ config: { labels: { a: '1', b: '2' }, args: ['x', 'y'], data: Buffer.from('z') }, runtime_handler: '' });
    const same = requestFingerprint({ runtime_handler: '', config: { data: Buffer.from('z'), args: ['x', 'y'], labels: { b: '2', a: '1' } } });
    assert.equal(one, same);
    assert.match(one, /^[0-9a-f]{64}$/);
    assert.notEqual(requestFingerprint({ config: { labels: { a: '1', b: '3' }, args: ['x', 'y'], data: Buffer.from('z') }, runtime_handler: '' }), one);
    assert.notEqual(requestFingerprint({ config: { labels: { a: '1', b: '2' }, args: ['y', 'x'], data: Buffer.from('z') }, runtime_handler: '' }), one, 'list order matters');
  });
});
