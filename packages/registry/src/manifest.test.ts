import { test } from 'node:test';
import assert from 'node:assert/strict';
import { parseManifest } from './manifest.js';
import { detectManifestMediaType, DOCKER_MANIFEST, DOCKER_MANIFEST_LIST, OCI_INDEX, OCI_MANIFEST } from './media-types.js';
import { RegistryError } from './errors.js';

const D1 = 'sha256:' + '1'.repeat(64);
const D2 = 'sha256:' + '2'.repeat(64);
const config = { mediaType: 'application/vnd.oci.image.config.v1+json', digest: D1, size: 10 };
const layer = { mediaType: 'application/vnd.oci.image.layer.v1.tar+gzip', digest: D2, size: 20 };

function bytes(value: unknown): Buffer {
  return Buffer.from(JSON.stringify(value));
}

function kindOf(fn: () => unknown): string {
  try {
    fn();
  } catch (err) {
    assert.ok(err instanceof RegistryError, String(err));
    return `${err.kind}: ${err.message}`;
  }
  return 'ok';
}

test('detects media types from the body, the Content-Type, then the shape', () => {
  assert.equal(detectManifestMediaType({ mediaType: DOCKER_MANIFEST, config, layers: [] }, 'application/json'), DOCKER_MANIFEST);
  assert.equal(detectManifestMediaType({ schemaVersion: 2, config, layers: [] }, `${DOCKER_MANIFEST}; charset=utf-8`), DOCKER_MANIFEST);
  assert.equal(detectManifestMediaType({ schemaVersion: 2, config, layers: [] }, 'application/json'), OCI_MANIFEST);
  assert.equal(detectManifestMediaType({ schemaVersion: 2, manifests: [] }, undefined), OCI_INDEX);
  assert.equal(detectManifestMediaType({ schemaVersion: 1, fsLayers: [], signatures: [] }, 'application/json'), 'application/vnd.docker.distribution.manifest.v1+prettyjws');
  assert.equal(detectManifestMediaType({ schemaVersion: 2 }, 'text/plain'), undefined);
});

test('parses image manifests, including ones without mediaType', () => {
  const parsed = parseManifest(bytes({ schemaVersion: 2, config, layers: [layer], annotations: { a: 'b' } }), 'application/json', 'x');
  assert.deepEqual(parsed, { kind: 'manifest', mediaType: OCI_MANIFEST, manifest: { mediaType: OCI_MANIFEST, config, layers: [layer], annotations: { a: 'b' } } });
  const docker = parseManifest(
    bytes({ schemaVersion: 2, mediaType: DOCKER_MANIFEST, config: { ...config, mediaType: 'application/vnd.docker.container.image.v1+json' }, layers: [] }),
    DOCKER_MANIFEST,
    'x',
  );
  assert.equal(docker.kind, 'manifest');
});

test('parses indexes and manifest lists', () => {
  const parsed = parseManifest(
    bytes({ schemaVersion: 2, mediaType: DOCKER_MANIFEST_LIST, manifests: [{ mediaType: DOCKER_MANIFEST, digest: D1, size: 5, platform: { os: 'linux', architecture: 'arm', variant: 'v7' } }] }),
    DOCKER_MANIFEST_LIST,
    'x',
  );
  assert.deepEqual(parsed, {
    kind: 'index',
    mediaType: DOCKER_MANIFEST_LIST,
    manifests: [{ mediaType: DOCKER_MANIFEST, digest: D1, size: 5, platform: { os: 'linux', architecture: 'arm', variant: 'v7' } }],
  });
});

test('schema 1 and unknown media types are unsupported, with a way out', () => {
  assert.match(
    kindOf(() => parseManifest(bytes({ schemaVersion: 1, name: 'a', tag: 'b', fsLayers: [] }), 'application/vnd.docker.distribution.manifest.v1+prettyjws', 'img')),
    /^unsupported-media-type: img uses the Docker image manifest schema 1 .*push the image again/,
  );
  assert.match(
    kindOf(() => parseManifest(bytes({ schemaVersion: 2, mediaType: 'application/vnd.oci.artifact.manifest.v1+json' }), undefined, 'img')),
    /^unsupported-media-type: img has manifest media type application\/vnd\.oci\.artifact\.manifest\.v1\+json/,
  );
  assert.match(
    kindOf(() => parseManifest(bytes({ schemaVersion: 2, config: { ...config, mediaType: 'application/vnd.cncf.helm.config.v1+json' }, layers: [] }), undefined, 'chart')),
    /^unsupported-media-type: chart is not a container image: its config has media type application\/vnd\.cncf\.helm\.config\.v1\+json/,
  );
});

test('malformed manifests are invalid', () => {
  const cases: [unknown, RegExp][] = [
    ['not json', /not valid JSON/],
    [[1, 2], /not a JSON object/],
    [{ schemaVersion: 2 }, /neither an image manifest nor an index/],
    [{ schemaVersion: 2, mediaType: OCI_MANIFEST, layers: [] }, /config must be an object/],
    [{ schemaVersion: 2, mediaType: OCI_MANIFEST, config: { ...config, digest: 'sha256:abc' }, layers: [] }, /config has a malformed digest/],
    [{ schemaVersion: 2, mediaType: OCI_MANIFEST, config, layers: [{ ...layer, size: -1 }] }, /layers\[0\] has an invalid size/],
    [{ schemaVersion: 3, mediaType: OCI_MANIFEST, config, layers: [] }, /schemaVersion 3/],
    [{ schemaVersion: 2, mediaType: OCI_INDEX, manifests: [{ mediaType: OCI_MANIFEST, digest: D1, size: 1, platform: { os: 'linux' } }] }, /platform must have/],
  ];
  for (const [body, pattern] of cases) {
    const raw = typeof body === 'string' ? Buffer.from(body) : bytes(body);
    const result = kindOf(() => parseManifest(raw, undefined, 'img'));
    assert.match(result, /^invalid-manifest: invalid manifest for img: /, JSON.stringify(body));
    assert.match(result, pattern, JSON.stringify(body));
  }
});
