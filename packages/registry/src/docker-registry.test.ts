import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { createLogger } from '@skiff/common';
import { normalizeReference } from '@skiff/reference';
import { RegistryClient } from './registry-client.js';
import { emptyRegistriesConfig, parseRegistriesConfig, type RegistriesConfig } from './registries-config.js';
import { OCI_INDEX } from './media-types.js';
import { freePort, haveDockerRegistry, LocalRegistry } from './testing/docker-registry.js';
import { buildImage, sha256, type TestImage } from './testing/tar.js';
import type { Platform } from './types.js';
import { readAll, rejectsWith } from './testing/assertions.js';

const skip = haveDockerRegistry() ? false : '/usr/bin/docker-registry is not installed (apt-get install docker-registry)';
const logger = createLogger('registry-test', 'fatal');
const AMD64: Platform = { os: 'linux', architecture: 'amd64' };

function client(registries: RegistriesConfig = emptyRegistriesConfig(), platform: Platform = AMD64): RegistryClient {
  return new RegistryClient({ registries, logger, platform, timeouts: { connectMs: 2000, responseMs: 5000, idleMs: 5000 } });
}

describe('against a real distribution registry', { skip }, () => {
  let registry: LocalRegistry;
  let image: TestImage;
  let amd: TestImage;
  let arm: TestImage;
  let indexDigest: string;
  const clients: RegistryClient[] = [];
  const make = (...args: Parameters<typeof client>): RegistryClient => {
    const c = client(...args);
    clients.push(c);
    return c;
  };

  before(async () => {
    registry = await LocalRegistry.start();
    image = buildImage({ architecture: 'amd64', files: [{ hello: 'hello from skiff\n' }, { 'etc/motd': 'second layer\n' }] });
    await registry.pushImage('test/hello', 'v1', image);
    await registry.pushImage('k8s-mirror/pause', '3.10', image);

    amd = buildImage({ architecture: 'amd64', files: [{ arch: 'amd64\n' }], docker: true });
    arm = buildImage({ architecture: 'arm64', variant: 'v8', files: [{ arch: 'arm64\n' }], docker: true });
    await registry.pushImage('test/multi', 'amd64', amd);
    await registry.pushImage('test/multi', 'arm64', arm);
    const index = Buffer.from(
      JSON.stringify({
        schemaVersion: 2,
        mediaType: OCI_INDEX,
        manifests: [
          { mediaType: amd.mediaType, digest: amd.manifestDigest, size: amd.manifest.length, platform: { os: 'linux', architecture: 'amd64' } },
          { mediaType: arm.mediaType, digest: arm.manifestDigest, size: arm.manifest.length, platform: { os: 'linux', architecture: 'arm64', variant: 'v8' } },
        ],
      }),
    );
    indexDigest = await registry.pushManifest('test/multi', 'latest', OCI_INDEX, index);
  });

  after(async () => {
    for (const c of clients) c.close();
    await registry?.stop();
  });

  test('resolves by tag and fetches the config and layers', async () => {
    const c = make();
    const resolved = await c.resolve(normalizeReference(`${registry.host}/test/hello:v1`));
    assert.equal(resolved.manifestDigest, image.manifestDigest);
    assert.equal(resolved.topDigest, image.manifestDigest);
    assert.equal(resolved.topMediaType, 'application/vnd.oci.image.manifest.v1+json');
    assert.deepEqual(resolved.platform, AMD64);
    assert.deepEqual(resolved.endpoint, { host: registry.host, repository: 'test/hello', insecure: false, plainHttp: true, mirror: false, reference: 'v1' });
    assert.equal(resolved.manifest.layers.length, 2);

    const config = await c.fetchBlob(resolved, resolved.manifest.config);
    assert.deepEqual(config, image.config);
    for (const [i, layer] of resolved.manifest.layers.entries()) {
      const bytes = await readAll(await c.openBlob(resolved, layer));
      assert.deepEqual(bytes, image.layers[i]);
      assert.equal(sha256(bytes), layer.digest);
    }
  });

  test('resolves by digest', async () => {
    const resolved = await make().resolve(normalizeReference(`${registry.host}/test/hello@${image.manifestDigest}`));
    assert.equal(resolved.manifestDigest, image.manifestDigest);
    assert.equal(resolved.topDigest, image.manifestDigest);
  });

  test('missing tags, repositories and blobs are not-found', async () => {
    const c = make();
    await rejectsWith(c.resolve(normalizeReference(`${registry.host}/test/hello:v2`)), 'not-found', new RegExp(`^image ${registry.host}/test/hello:v2 not found on ${registry.host}`));
    await rejectsWith(c.resolve(normalizeReference(`${registry.host}/nope/nothing:v1`)), 'not-found', /not found/);
    const resolved = await c.resolve(normalizeReference(`${registry.host}/test/hello:v1`));
    const missing = { ...resolved.manifest.config, digest: sha256(Buffer.from('absent')) };
    await rejectsWith(c.fetchBlob(resolved, missing), 'not-found', /^blob sha256:\w+ of .* not found on/);
    await rejectsWith(c.fetchBlob(resolved, { ...resolved.manifest.config, size: resolved.manifest.config.size - 1 }), 'digest-mismatch');
    await rejectsWith(c.fetchBlob(resolved, resolved.manifest.config, { maxBytes: 4 }), 'too-large');
  });

  test('a mirror for registry.k8s.io answers for it', async () => {
    const conf = parseRegistriesConfig(`
[[registry]]
prefix = "registry.k8s.io"
location = "registry.k8s.io"
[[registry.mirror]]
location = "${registry.host}/k8s-mirror"
`);
    const c = make(conf);
    const resolved = await c.resolve(normalizeReference('registry.k8s.io/pause:3.10'));
    assert.equal(resolved.endpoint.mirror, true);
    assert.equal(resolved.endpoint.host, registry.host);
    assert.equal(resolved.endpoint.repository, 'k8s-mirror/pause');
    assert.equal(resolved.manifestDigest, image.manifestDigest);
    assert.deepEqual(await c.fetchBlob(resolved, resolved.manifest.config), image.config);
  });

  test('failing mirrors fall through in order; when all fail, every endpoint is named', async () => {
    const closed = await freePort();
    const conf = parseRegistriesConfig(`
[[registry]]
prefix = "registry.k8s.io"
location = "127.0.0.1:${closed}/origin"
[[registry.mirror]]
location = "127.0.0.1:${closed}/down"
[[registry.mirror]]
location = "${registry.host}/empty-mirror"
[[registry.mirror]]
location = "${registry.host}/k8s-mirror"
`);
    const c = make(conf);
    const resolved = await c.resolve(normalizeReference('registry.k8s.io/pause:3.10'));
    assert.equal(resolved.endpoint.repository, 'k8s-mirror/pause');

    const err = await rejectsWith(c.resolve(normalizeReference('registry.k8s.io/pause:9.99')), 'unreachable');
    assert.equal(err.attempts.length, 4);
    assert.deepEqual(err.attempts.map((a) => a.kind), ['unreachable', 'not-found', 'not-found', 'unreachable']);
    assert.match(err.message, new RegExp(`mirror 127\\.0\\.0\\.1:${closed}/down/pause: connection to 127\\.0\\.0\\.1:${closed} refused`));
    assert.match(err.message, new RegExp(`mirror ${registry.host}/empty-mirror/pause: image registry\\.k8s\\.io/pause:9\\.99 not found`));
    assert.match(err.message, new RegExp(`127\\.0\\.0\\.1:${closed}/origin/pause: connection to 127\\.0\\.0\\.1:${closed} refused`));
  });

  test('an index with two platforms resolves to the client platform', async () => {
    const ref = normalizeReference(`${registry.host}/test/multi:latest`);
    const forAmd = await make().resolve(ref);
    assert.equal(forAmd.topDigest, indexDigest);
    assert.equal(forAmd.topMediaType, OCI_INDEX);
    assert.equal(forAmd.manifestDigest, amd.manifestDigest);
    assert.equal(forAmd.manifest.mediaType, 'application/vnd.docker.distribution.manifest.v2+json');
    assert.deepEqual(forAmd.platform, { os: 'linux', architecture: 'amd64' });

    const armClient = make(emptyRegistriesConfig(), { os: 'linux', architecture: 'arm64', variant: 'v8' });
    const forArm = await armClient.resolve(ref);
    assert.equal(forArm.topDigest, indexDigest);
    assert.equal(forArm.manifestDigest, arm.manifestDigest);
    assert.deepEqual(forArm.platform, { os: 'linux', architecture: 'arm64', variant: 'v8' });
    assert.deepEqual(await armClient.fetchBlob(forArm, forArm.manifest.config), arm.config);

    const byDigest = await make().resolve(normalizeReference(`${registry.host}/test/multi@${indexDigest}`));
    assert.equal(byDigest.manifestDigest, amd.manifestDigest);

    await rejectsWith(
      make(emptyRegistriesConfig(), { os: 'linux', architecture: 's390x' }).resolve(ref),
      'not-found',
      /has no manifest for platform linux\/s390x \(it offers: linux\/amd64, linux\/arm64\/v8\)/,
    );
  });

  test('an aborted pull stops with the abort reason', async () => {
    const c = make();
    const controller = new AbortController();
    controller.abort();
    await assert.rejects(c.resolve(normalizeReference(`${registry.host}/test/hello:v1`), { signal: controller.signal }), { name: 'AbortError' });

    const resolved = await c.resolve(normalizeReference(`${registry.host}/test/hello:v1`));
    const late = new AbortController();
    const stream = await c.openBlob(resolved, resolved.manifest.layers[0]!, { signal: late.signal });
    late.abort();
    await assert.rejects(readAll(stream), { name: 'AbortError' });
  });
});

describe('against a real registry with htpasswd basic auth', { skip }, () => {
  let registry: LocalRegistry;
  let image: TestImage;
  const clients: RegistryClient[] = [];
  const make = (): RegistryClient => {
    const c = client();
    clients.push(c);
    return c;
  };

  before(async () => {
    registry = await LocalRegistry.start({ htpasswd: { username: 'puller', password: 's3cret pass' } });
    image = buildImage({ architecture: 'amd64', files: [{ secret: 'private layer\n' }] });
    await registry.pushImage('private/app', '1.0', image);
  });

  after(async () => {
    for (const c of clients) c.close();
    await registry?.stop();
  });

  test('the right credentials pull, as username/password or as auth', async () => {
    const ref = normalizeReference(`${registry.host}/private/app:1.0`);
    for (const auth of [{ username: 'puller', password: 's3cret pass' }, { auth: Buffer.from('puller:s3cret pass').toString('base64') }]) {
      const c = make();
      const resolved = await c.resolve(ref, { auth });
      assert.equal(resolved.manifestDigest, image.manifestDigest);
      assert.deepEqual(await c.fetchBlob(resolved, resolved.manifest.config, { auth }), image.config);
      assert.deepEqual(await readAll(await c.openBlob(resolved, resolved.manifest.layers[0]!, { auth })), image.layers[0]);
    }
  });

  test('wrong credentials are unauthorized; none at all asks for them', async () => {
    const ref = normalizeReference(`${registry.host}/private/app:1.0`);
    await rejectsWith(make().resolve(ref, { auth: { username: 'puller', password: 'wrong' } }), 'unauthorized', new RegExp(`^authentication failed for ${registry.host}`));
    await rejectsWith(make().resolve(ref), 'unauthorized', new RegExp(`^authentication required for ${registry.host}`));
  });
});
