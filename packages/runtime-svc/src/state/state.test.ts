import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';
import { FULL_ID, newId } from './ids.js';
import { KeyedMutex } from './keyed-mutex.js';
import type { ContainerRecord, SandboxRecord } from './records.js';
import { containerNameKey, podNameKey, StateIndex } from './state-index.js';

describe('ids and name reservations', () => {
  it('makes 64-hex ids', () => {
    const a = newId();
    assert.match(a, FULL_ID);
    assert.notEqual(a, newId());
  });

  it('reserves pod and container names once, naming the holder on conflict', () => {
    const index = new StateIndex();
    const meta = { name: 'web', namespace: 'default', uid: 'u1', attempt: 0 };
    const key = podNameKey(meta);
    assert.equal(key, 'web_default_u1_0');
    index.podNames.reserve(key, 'a'.repeat(64));
    index.podNames.reserve(key, 'a'.repeat(64));
    assert.throws(() => index.podNames.reserve(key, 'b'.repeat(64)), (e: Error & { code?: number }) => e.code === 6 && e.message.includes('a'.repeat(64)));
    index.podNames.release(key, 'b'.repeat(64));
    assert.throws(() => index.podNames.reserve(key, 'b'.repeat(64)));
    index.podNames.release(key, 'a'.repeat(64));
    index.podNames.reserve(key, 'b'.repeat(64));
    assert.notEqual(podNameKey({ ...meta, attempt: 1 }), key);

    const ckey = containerNameKey({ name: 'app', attempt: 2 }, meta);
    assert.equal(ckey, 'app_web_default_u1_2');
    index.containerNames.reserve(ckey, 'c'.repeat(64));
    assert.throws(() => index.containerNames.reserve(ckey, 'd'.repeat(64)), /already reserved for container c{64}/);
  });

  it('finds records by full id or unique prefix', () => {
    const index = new StateIndex();
    const sandbox = (id: string) => ({ id }) as SandboxRecord;
    index.sandboxes.set('abc1'.padEnd(64, '0'), sandbox('abc1'.padEnd(64, '0')));
    index.sandboxes.set('abc2'.padEnd(64, '0'), sandbox('abc2'.padEnd(64, '0')));
    assert.equal(index.findSandbox('abc1')?.id, 'abc1'.padEnd(64, '0'));
    assert.equal(index.findSandbox('abc2'.padEnd(64, '0'))?.id, 'abc2'.padEnd(64, '0'));
    assert.equal(index.findSandbox('ffff'), undefined);
    assert.equal(index.findSandbox(''), undefined);
    assert.throws(() => index.findSandbox('abc'), /ambiguous/);
    index.containers.set('1'.repeat(64), { id: '1'.repeat(64), sandboxId: 'abc1'.padEnd(64, '0') } as ContainerRecord);
    assert.equal(index.containersOf('abc1'.padEnd(64, '0')).length, 1);
    assert.equal(index.findContainer('11')?.id, '1'.repeat(64));
  });
});

describe('KeyedMutex', () => {
  it('serialises per key and lets other keys run', async () => {
    const mutex = new KeyedMutex();
    const order: string[] = [];
    const slow = mutex.run('a', async () => {
      order.push('a1 start');
      await sleep(30);
      order.push('a1 end');
    });
    const second = mutex.run('a', async () => {
      order.push('a2');
    });
    const other = mutex.run('b', async () => {
      order.push('b');
    });
    await Promise.all([slow, second, other]);
    assert.deepEqual(order, ['a1 start', 'b', 'a1 end', 'a2']);
    await assert.rejects(mutex.run('a', async () => Promise.reject(new Error('boom'))), /boom/);
    assert.equal(await mutex.run('a', async () => 5), 5, 'a failure releases the key');
  });
});
