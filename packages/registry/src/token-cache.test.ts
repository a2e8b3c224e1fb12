import { test } from 'node:test';
import assert from 'node:assert/strict';
import { TokenCache, tokenReuseMillis } from './token-cache.js';

test('tokens are reused until a margin before expires_in, 60 s by default', () => {
  assert.equal(tokenReuseMillis(undefined), 54_000);
  assert.equal(tokenReuseMillis(0), 54_000);
  assert.equal(tokenReuseMillis(300), 270_000);
  assert.equal(tokenReuseMillis(3600), 3_570_000);
  assert.equal(tokenReuseMillis(3), 0);
});

test('expires entries by the clock and skips tokens too short-lived to reuse', () => {
  let now = 1_000_000;
  const cache = new TokenCache(() => now);
  cache.set('k', { token: 't1', expiresInSeconds: 60 });
  assert.equal(cache.get('k'), 't1');
  now += 53_999;
  assert.equal(cache.get('k'), 't1');
  now += 1;
  assert.equal(cache.get('k'), undefined);
  cache.set('short', { token: 's', expiresInSeconds: 2 });
  assert.equal(cache.get('short'), undefined);
});

test('concurrent callers of one key share one fetch; other keys fetch their own', async () => {
  const cache = new TokenCache();
  let fetches = 0;
  const fetch = async (): Promise<{ token: string }> => {
    fetches++;
    await new Promise((r) => setTimeout(r, 10));
    return { token: `t${fetches}` };
  };
  const tokens = await Promise.all([cache.getOrFetch('a', fetch), cache.getOrFetch('a', fetch), cache.getOrFetch('a', fetch)]);
  assert.deepEqual(tokens, ['t1', 't1', 't1']);
  assert.equal(await cache.getOrFetch('a', fetch), 't1');
  assert.equal(fetches, 1);
  assert.equal(await cache.getOrFetch('b', fetch), 't2');
  cache.delete('a');
  assert.equal(await cache.getOrFetch('a', fetch), 't3');
});

test('a failed fetch is not cached', async () => {
  const cache = new TokenCache();
  await assert.rejects(cache.getOrFetch('a', async () => Promise.reject(new Error('boom'))), /boom/);
  assert.equal(await cache.getOrFetch('a', async () => ({ token: 'ok' })), 'ok');
});
