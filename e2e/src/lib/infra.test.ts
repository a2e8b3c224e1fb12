import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { MediaTypes } from './media-types.js';
import { startRegistry, type Registry } from './registry.js';
import { RegistryClient, RegistryError } from './registry-client.js';
import { sha256Digest } from './sha256.js';
import { getTestImage, pushSchema1Image, pushTestImage, TEST_IMAGE_NAMES } from './image-catalogue.js';
import { startTokenServer, type TokenServer } from './token-server.js';

const MANIFEST_ACCEPT = [MediaTypes.ociManifest, MediaTypes.ociIndex, MediaTypes.dockerManifest, MediaTypes.dockerManifestList].join(', ');

async function fetchManifest(registry: Registry, repo: string, reference: string, authorization?: string) {
  const headers: Record<string, string> = { Accept: MANIFEST_ACCEPT };
  if (authorization !== undefined) headers.Authorization = authorization;
  const response = await fetch(`${registry.url}/v2/${repo}/manifests/${reference}`, { headers });
  const body = Buffer.from(await response.arrayBuffer());
  return { status: response.status, body, digest: response.headers.get('docker-content-digest'), type: response.headers.get('content-type') };
}

describe('plain registry', () => {
  let registry: Registry;
  before(async () => {
    registry = await startRegistry({ schema1: true });
  });
  after(() => registry?.stop());

  for (const name of ['busybox', 'multilayer', 'multiarch', 'docker-schema2'] as const) {
    test(`push ${name} and read its manifest back`, async () => {
      const image = await getTestImage(name);
      const top = image.kind === 'image' ? image.manifest : image.index;
      const pushed = await pushTestImage(registry, name);
      assert.equal(pushed.digest, top.digest);
      const fetched = await fetchManifest(registry, pushed.repo, pushed.tag);
      assert.equal(fetched.status, 200);
      assert.equal(fetched.type, top.mediaType);
      assert.equal(fetched.digest, top.digest);
      assert.equal(sha256Digest(fetched.body), top.digest);
    });
  }

  test('multilayer has three layers and diff_ids matching the tars', async () => {
    const image = await getTestImage('multilayer');
    assert.equal(image.kind, 'image');
    if (image.kind !== 'image') return;
    assert.equal(image.layers.length, 3);
    assert.deepEqual(image.configJson.rootfs.diff_ids, image.layers.map((l) => l.diffId));
    const client = new RegistryClient(registry.url);
    const layer = await client.getBlob('skiff/multilayer', image.layers[2]!.digest);
    assert.equal(sha256Digest(layer), image.layers[2]!.digest);
  });

  test('chunked upload stores the same content', async () => {
    const pushed = await pushTestImage(registry, 'busybox', { repo: 'chunked/busybox', chunkSize: 256 * 1024 });
    const fetched = await fetchManifest(registry, 'chunked/busybox', pushed.digest);
    assert.equal(fetched.status, 200);
  });

  test('a corrupted blob is served with the wrong digest', async () => {
    const image = await getTestImage('multilayer');
    if (image.kind !== 'image') throw new Error('expected an image');
    const layer = image.layers[1]!;
    await registry.corruptBlob(layer.digest);
    const served = await new RegistryClient(registry.url).getBlob('skiff/multilayer', layer.digest);
    assert.equal(served.length, layer.size);
    assert.notEqual(sha256Digest(served), layer.digest);
  });

  test('a signed schema1 manifest is stored and served as prettyjws', async () => {
    const pushed = await pushSchema1Image(registry);
    const response = await fetch(`${registry.url}/v2/${pushed.repo}/manifests/${pushed.tag}`);
    await response.arrayBuffer();
    assert.equal(response.status, 200);
    assert.equal(response.headers.get('content-type'), MediaTypes.dockerSchema1Signed);
  });

  test('every catalogue image except the large ones builds', async () => {
    for (const name of TEST_IMAGE_NAMES) {
      if (name === 'big' || name === 'bench5') continue;
      const image = await getTestImage(name);
      assert.ok(image.kind === 'index' || image.layers.length > 0, name);
    }
  });
});

describe('token-auth registry', () => {
  let tokens: TokenServer;
  let registry: Registry;
  const credentials = { username: 'tokenuser', password: 'tokenpass' };
  before(async () => {
    tokens = await startTokenServer(credentials);
    registry = await startRegistry({ token: tokens.registryAuth() });
  });
  after(async () => {
    await registry?.stop();
    await tokens?.stop();
  });

  test('anonymous push is refused', async () => {
    await assert.rejects(pushTestImage(registry, 'busybox'), (error: unknown) => {
      assert.ok(error instanceof RegistryError);
      assert.equal(error.status, 401);
      return true;
    });
  });

  test('wrong credentials get no token', async () => {
    const before = tokens.issued;
    const client = new RegistryClient(registry.url, { credentials: { ...credentials, password: 'nope' } });
    await assert.rejects(pushTestImage(registry, 'busybox', { client }), (error: unknown) => error instanceof RegistryError && error.status === 401);
    assert.equal(tokens.issued, before);
  });

  test('push with the token flow works, with one token for the whole push', async () => {
    const client = new RegistryClient(registry.url, { credentials });
    const before = tokens.issued;
    const pushed = await pushTestImage(registry, 'multilayer', { client });
    assert.equal(client.tokenFetches, 1);
    assert.equal(tokens.issued, before + 1);

    const anonymous = await fetchManifest(registry, pushed.repo, pushed.tag);
    assert.equal(anonymous.status, 401);

    const token = tokens.mintToken(credentials.username, [{ type: 'repository', name: pushed.repo, actions: ['pull'] }]);
    const fetched = await fetchManifest(registry, pushed.repo, pushed.tag, `Bearer ${token}`);
    assert.equal(fetched.status, 200);
    assert.equal(fetched.digest, pushed.digest);
  });

  test('refresh tokens from the OAuth2 form work against the registry', async () => {
    const form = (fields: Record<string, string>) => ({ method: 'POST', body: new URLSearchParams({ service: tokens.service, client_id: 'skiff', ...fields }) });
    const first = await fetch(tokens.realm, form({ grant_type: 'password', ...credentials, scope: 'repository:skiff/multilayer:pull' }));
    assert.equal(first.status, 200);
    const { refresh_token: refreshToken } = (await first.json()) as { refresh_token: string };
    const second = await fetch(tokens.realm, form({ grant_type: 'refresh_token', refresh_token: refreshToken, scope: 'repository:skiff/multilayer:pull' }));
    assert.equal(second.status, 200);
    const body = (await second.json()) as { access_token: string; expires_in: number; issued_at: string };
    assert.ok(body.expires_in > 0 && body.issued_at !== '');
    const fetched = await fetchManifest(registry, 'skiff/multilayer', 'latest', `Bearer ${body.access_token}`);
    assert.equal(fetched.status, 200);
  });
});

describe('htpasswd registry', () => {
  let registry: Registry;
  const credentials = { username: 'alice', password: 'wonderland' };
  before(async () => {
    registry = await startRegistry({ htpasswd: credentials });
  });
  after(() => registry?.stop());

  test('wrong password gets 401', async () => {
    await assert.rejects(
      pushTestImage(registry, 'busybox', { credentials: { ...credentials, password: 'wrong' } }),
      (error: unknown) => error instanceof RegistryError && error.status === 401,
    );
  });

  test('right password pushes', async () => {
    const pushed = await pushTestImage(registry, 'busybox', { credentials });
    const basic = `Basic ${Buffer.from(`${credentials.username}:${credentials.password}`).toString('base64')}`;
    const fetched = await fetchManifest(registry, pushed.repo, pushed.tag, basic);
    assert.equal(fetched.digest, pushed.digest);
  });
});
