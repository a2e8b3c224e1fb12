import assert from 'node:assert/strict';
import { mkdtemp, rename, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { eventually } from '@skiff/test-support';
import { loadDefaultNetwork } from './config.js';
import { DefaultNetworkCache } from './default-network-cache.js';

const conflist = (name: string): string => JSON.stringify({ cniVersion: '1.0.0', name, plugins: [{ type: 'bridge' }] });

/** Until the cache has seen the directory change (inotify's event comes on a later turn of the loop). */
function until(check: () => Promise<boolean>): Promise<void> {
  return eventually('the cache saw the change', check);
}

/** A cache over the real loader that counts its reads. */
function countingCache(): { cache: DefaultNetworkCache; reads: () => number } {
  let reads = 0;
  const cache = new DefaultNetworkCache(async (confDir) => {
    reads++;
    return loadDefaultNetwork(confDir);
  });
  return { cache, reads: () => reads };
}

test('the default network is read once while its directory is unchanged, and again after any change in it', async () => {
  const dir = await mkdtemp(join(tmpdir(), 'skiff-cni-cache-'));
  const { cache, reads } = countingCache();
  try {
    assert.equal(await cache.get(dir), undefined);
    await writeFile(join(dir, '20-b.conflist'), conflist('b'));
    await until(async () => (await cache.get(dir))?.network.name === 'b');
    const readsOnceKept = reads();
    for (let i = 0; i < 5; i++) assert.equal((await cache.get(dir))?.network.name, 'b');
    assert.equal(reads(), readsOnceKept);

    // Each caller gets its own copy.
    const mine = await cache.get(dir);
    mine!.network.name = 'changed by a caller';
    assert.equal((await cache.get(dir))?.network.name, 'b');

    // A file that sorts first, an edit, a rename and a removal are each seen.
    await writeFile(join(dir, '10-a.conflist'), conflist('a'));
    await until(async () => (await cache.get(dir))?.network.name === 'a');
    await writeFile(join(dir, '10-a.conflist'), conflist('a2'));
    await until(async () => (await cache.get(dir))?.network.name === 'a2');
    await rename(join(dir, '10-a.conflist'), join(dir, '30-a.conflist'));
    await until(async () => (await cache.get(dir))?.network.name === 'b');
    await rm(join(dir, '20-b.conflist'));
    await until(async () => (await cache.get(dir))?.network.name === 'a2');
    assert.equal((await cache.get(dir))?.network.name, 'a2');

    // A file that does not parse is reported each time, never kept.
    await writeFile(join(dir, '05-broken.conflist'), '{ not json');
    await until(() => cache.get(dir).then(() => false, () => true));
    const readsBefore = reads();
    await assert.rejects(cache.get(dir));
    await assert.rejects(cache.get(dir));
    assert.equal(reads(), readsBefore + 2);
  } finally {
    cache.close();
    await rm(dir, { recursive: true, force: true });
  }
});

test('a directory that does not exist yet is read on every call', async () => {
  const parent = await mkdtemp(join(tmpdir(), 'skiff-cni-cache-'));
  const dir = join(parent, 'net.d');
  const { cache, reads } = countingCache();
  try {
    assert.equal(await cache.get(dir), undefined);
    assert.equal(await cache.get(dir), undefined);
    assert.equal(reads(), 2);
  } finally {
    cache.close();
    await rm(parent, { recursive: true, force: true });
  }
});
