import { after, before, beforeEach, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { createLogger } from '@skiff/common';
import { normalizeReference } from '@skiff/reference';
import { RegistryClient } from './registry-client.js';
import { emptyRegistriesConfig, parseRegistriesConfig, type RegistriesConfig } from './registries-config.js';
import { FakeServer, registryError, sendJson } from './testing/fake-registry.js';
import { buildImage, sha256 } from './testing/tar.js';
import { readAll, rejectsWith } from './testing/assertions.js';

const logger = createLogger('registry-test', 'fatal');
const image = buildImage({ architecture: 'amd64', files: [{ a: '1\n' }, { b: '2\n' }, { c: '3\n' }] });
const blobs = new Map<string, Buffer>([[sha256(image.config), image.config], ...image.layers.map((l) => [sha256(l), l] as [string, Buffer])]);
const schema1 = Buffer.from(JSON.stringify({ schemaVersion: 1, name: 'old', tag: 'v1', architecture: 'amd64', fsLayers: [], history: [] }));

describe('registry HTTP flows (token auth, redirects, verification, failures)', () => {
  let tokenServer: FakeServer;
  let storage: FakeServer;
  let registry: FakeServer;
  const validTokens = new Set<string>();
  let issued = 0;
  const clients: RegistryClient[] = [];
  const make = (registries: RegistriesConfig = emptyRegistriesConfig(), timeouts?: { responseMs?: number }): RegistryClient => {
    const c = new RegistryClient({ registries, logger, platform: { os: 'linux', architecture: 'amd64' }, timeouts: { connectMs: 2000, responseMs: 5000, ...timeouts } });
    clients.push(c);
    return c;
  };
  const ref = (path: string): ReturnType<typeof normalizeReference> => normalizeReference(`${registry.host}/${path}`);

  before(async () => {
    tokenServer = await FakeServer.start((req, res) => {
      const issue = (field: 'token' | 'access_token'): void => {
        const token = `tok-${++issued}`;
        validTokens.add(token);
        sendJson(res, 200, { [field]: token, expires_in: 300 });
      };
      if (req.method === 'POST') {
        const form = new URLSearchParams(req.body);
        if (form.get('grant_type') === 'refresh_token' && form.get('refresh_token') === 'refresh-abc') return issue('access_token');
        return sendJson(res, 401, { error: 'invalid refresh token' });
      }
      const authorization = req.headers.authorization;
      if (authorization !== undefined && authorization !== `Basic ${Buffer.from('user:pass').toString('base64')}`) {
        return sendJson(res, 401, { details: 'incorrect username or password' });
      }
      issue('token');
    });
    storage = await FakeServer.start((req, res) => {
      const blob = blobs.get(req.url.pathname.slice('/blob/'.length));
      if (!blob || req.url.searchParams.get('sig') !== 'signed') return void res.writeHead(403).end();
      res.writeHead(200, { 'content-length': String(blob.length) }).end(blob);
    });
    registry = await FakeServer.start(async (req, res) => {
      const path = req.url.pathname;
      const m = /^\/v2\/(.+)\/(manifests|blobs)\/([^/]+)$/.exec(path);
      const repo = m?.[1] ?? '';
      if (repo.startsWith('slow')) return; // never answers
      const authorization = req.headers.authorization ?? '';
      if (!validTokens.has(authorization.replace(/^Bearer /, ''))) {
        return registryError(res, 401, 'UNAUTHORIZED', 'authentication required', {
          'www-authenticate': `Bearer realm="http://${tokenServer.host}/token",service="fake-registry",scope="repository:${repo}:pull"`,
        });
      }
      if (!m) return registryError(res, 404, 'NOT_FOUND', 'no route');
      const [, , kind, reference] = m as unknown as [string, string, string, string];
      if (repo === 'forbidden') return registryError(res, 403, 'DENIED', 'requested access to the resource is denied');
      if (repo === 'broken') return registryError(res, 503, 'UNAVAILABLE', 'storage backend down');
      if (kind === 'blobs') {
        if (!blobs.has(reference)) return registryError(res, 404, 'BLOB_UNKNOWN', 'blob unknown to registry');
        if (reference === sha256(image.config)) return res.writeHead(200, { 'content-length': String(image.config.length) }).end(image.config);
        return res.writeHead(307, { location: `http://${storage.host}/blob/${reference}?sig=signed` }).end();
      }
      let body = image.manifest;
      let contentType = image.mediaType;
      let announced = image.manifestDigest;
      if (repo === 'old') [body, contentType, announced] = [schema1, 'application/vnd.docker.distribution.manifest.v1+prettyjws', sha256(schema1)];
      if (repo === 'lying') announced = sha256(Buffer.from('something else'));
      if (repo === 'tampered') body = Buffer.from(image.manifest.toString().replace('"layers"', ' "layers"'));
      if (repo === 'huge') body = Buffer.alloc(5 * 1024 * 1024, 0x20);
      if (reference !== 'v1' && reference !== image.manifestDigest) return registryError(res, 404, 'MANIFEST_UNKNOWN', 'manifest unknown');
      res.writeHead(200, { 'content-type': contentType, 'content-length': String(body.length), 'docker-content-digest': announced }).end(body);
    });
  });

  beforeEach(() => {
    tokenServer.requests.length = 0;
    registry.requests.length = 0;
    storage.requests.length = 0;
  });

  after(async () => {
    for (const c of clients) c.close();
    await Promise.all([tokenServer.stop(), storage.stop(), registry.stop()]);
  });

  test('anonymous token: one token request for a whole pull; blob redirects drop the Authorization header', async () => {
    const c = make();
    const resolved = await c.resolve(ref('app:v1'));
    assert.equal(resolved.manifestDigest, image.manifestDigest);
    const [config, ...layers] = await Promise.all([
      c.fetchBlob(resolved, resolved.manifest.config),
      ...resolved.manifest.layers.map(async (l) => readAll(await c.openBlob(resolved, l))),
    ]);
    assert.deepEqual(config, image.config);
    assert.deepEqual(layers, image.layers);

    assert.equal(tokenServer.requests.length, 1);
    const tokenRequest = tokenServer.requests[0]!;
    assert.equal(tokenRequest.method, 'GET');
    assert.equal(tokenRequest.url.searchParams.get('service'), 'fake-registry');
    assert.deepEqual(tokenRequest.url.searchParams.getAll('scope'), ['repository:app:pull']);
    assert.equal(tokenRequest.url.searchParams.get('account'), null);
    assert.equal(tokenRequest.headers.authorization, undefined);

    // Only the very first request went without a token.
    assert.equal(registry.requests.filter((r) => !r.headers.authorization).length, 1);
    assert.equal(storage.requests.length, 3);
    for (const r of storage.requests) assert.equal(r.headers.authorization, undefined);
  });

  test('basic credentials go to the token server; wrong ones fail with what it said', async () => {
    const c = make();
    const auth = { username: 'user', password: 'pass' };
    await c.resolve(ref('app:v1'), { auth });
    await c.resolve(ref('app:v1'), { auth });
    assert.equal(tokenServer.requests.length, 1);
    const tokenRequest = tokenServer.requests[0]!;
    assert.equal(tokenRequest.headers.authorization, `Basic ${Buffer.from('user:pass').toString('base64')}`);
    assert.equal(tokenRequest.url.searchParams.get('account'), 'user');

    // Other credentials are another cache entry.
    await rejectsWith(
      c.resolve(ref('app:v1'), { auth: { username: 'user', password: 'nope' } }),
      'unauthorized',
      new RegExp(`^authentication failed for ${registry.host}: token server ${tokenServer.host} answered 401: incorrect username or password`),
    );
  });

  test('an identity token is exchanged with the OAuth2 refresh_token grant', async () => {
    const resolved = await make().resolve(ref('app:v1'), { auth: { identityToken: 'refresh-abc' } });
    assert.equal(resolved.manifestDigest, image.manifestDigest);
    assert.equal(tokenServer.requests.length, 1);
    const form = new URLSearchParams(tokenServer.requests[0]!.body);
    assert.equal(tokenServer.requests[0]!.method, 'POST');
    assert.equal(tokenServer.requests[0]!.headers['content-type'], 'application/x-www-form-urlencoded');
    assert.deepEqual(Object.fromEntries(form), {
      grant_type: 'refresh_token',
      refresh_token: 'refresh-abc',
      service: 'fake-registry',
      client_id: 'skiff',
      scope: 'repository:app:pull',
    });
    await rejectsWith(make().resolve(ref('app:v1'), { auth: { identityToken: 'expired' } }), 'unauthorized', /authentication failed/);
  });

  test('a registry token is sent as is', async () => {
    validTokens.add('given-token');
    await make().resolve(ref('app:v1'), { auth: { registryToken: 'given-token' } });
    assert.equal(tokenServer.requests.length, 0);
    assert.ok(registry.requests.every((r) => r.headers.authorization === 'Bearer given-token'));
    await rejectsWith(make().resolve(ref('app:v1'), { auth: { registryToken: 'bogus' } }), 'unauthorized', /registry token was rejected/);
  });

  test('a cached token the registry stops accepting is replaced', async () => {
    const c = make();
    await c.resolve(ref('app:v1'));
    validTokens.clear();
    await c.resolve(ref('app:v1'));
    assert.equal(tokenServer.requests.length, 2);
  });

  test('manifests are verified and recognised', async () => {
    const c = make();
    await rejectsWith(c.resolve(ref('old:v1')), 'unsupported-media-type', /schema 1/);
    await rejectsWith(c.resolve(ref('lying:v1')), 'digest-mismatch', /the registry announced/);
    await rejectsWith(c.resolve(ref(`tampered@${image.manifestDigest}`)), 'digest-mismatch', new RegExp(`expected ${image.manifestDigest}`));
    await rejectsWith(c.resolve(ref('huge:v1')), 'too-large', /4194304-byte limit/);
  });

  test('HTTP failures map to error kinds that name the host', async () => {
    const c = make(emptyRegistriesConfig(), { responseMs: 300 });
    await rejectsWith(c.resolve(ref('forbidden:v1')), 'denied', new RegExp(`denied by ${registry.host}: DENIED`));
    await rejectsWith(c.resolve(ref('broken:v1')), 'unreachable', new RegExp(`${registry.host} failed with 503 .*UNAVAILABLE: storage backend down`));
    await rejectsWith(c.resolve(ref('slow:v1')), 'unreachable', new RegExp(`${registry.host} sent no response within 0.3 s`));
  });

  test('credentials stay with the origin when a mirror on another host fails over to it', async () => {
    const mirror = await FakeServer.start((_req, res) => registryError(res, 500, 'UNKNOWN', 'mirror is sick'));
    try {
      const conf = parseRegistriesConfig(`
[[registry]]
prefix = "${registry.host}"
[[registry.mirror]]
location = "${mirror.host}/cache"
`);
      validTokens.add('origin-token');
      const resolved = await make(conf).resolve(ref('app:v1'), { auth: { registryToken: 'origin-token' } });
      assert.equal(resolved.endpoint.mirror, false);
      assert.equal(mirror.requests.length, 1);
      assert.equal(mirror.requests[0]!.url.pathname, '/v2/cache/app/manifests/v1');
      assert.equal(mirror.requests[0]!.headers.authorization, undefined);
    } finally {
      await mirror.stop();
    }
  });
});
