import { test } from 'node:test';
import assert from 'node:assert/strict';
import { defaultPlatform, normalizePlatform, platformScore, selectPlatformManifest } from './platform.js';
import { DOCKER_MANIFEST, OCI_MANIFEST } from './media-types.js';
import type { Descriptor, Platform } from './types.js';

let n = 0;
function entry(platform: Platform | undefined, extra: Partial<Descriptor> = {}): Descriptor {
  n++;
  const d: Descriptor = { mediaType: OCI_MANIFEST, digest: 'sha256:' + n.toString(16).padStart(64, '0'), size: 100 + n };
  if (platform) d.platform = platform;
  return { ...d, ...extra };
}

test('default platform follows the machine', () => {
  const p = defaultPlatform();
  assert.equal(p.os, 'linux');
  const expected: Record<string, string> = { x64: 'amd64', arm64: 'arm64', arm: 'arm' };
  if (expected[process.arch]) assert.equal(p.architecture, expected[process.arch]);
});

test('normalizes architecture spellings and default variants', () => {
  assert.deepEqual(normalizePlatform({ os: 'Linux', architecture: 'x86_64' }), { os: 'linux', architecture: 'amd64', variant: '' });
  assert.deepEqual(normalizePlatform({ os: 'linux', architecture: 'aarch64' }), { os: 'linux', architecture: 'arm64', variant: 'v8' });
  assert.deepEqual(normalizePlatform({ os: 'linux', architecture: 'armhf' }), { os: 'linux', architecture: 'arm', variant: 'v7' });
  assert.deepEqual(normalizePlatform({ os: 'linux', architecture: 'arm' }), { os: 'linux', architecture: 'arm', variant: 'v7' });
  assert.deepEqual(normalizePlatform({ os: 'linux', architecture: 'amd64', variant: 'v1' }), { os: 'linux', architecture: 'amd64', variant: '' });
});

test('variant compatibility', () => {
  const arm64 = { os: 'linux', architecture: 'arm64', variant: 'v8' };
  assert.ok(platformScore({ os: 'linux', architecture: 'arm64' }, arm64) > 0);
  assert.equal(platformScore({ os: 'linux', architecture: 'arm64', variant: 'v9' }, arm64), -1);
  const armv7 = { os: 'linux', architecture: 'arm', variant: 'v7' };
  assert.ok(platformScore({ os: 'linux', architecture: 'arm', variant: 'v6' }, armv7) >= 0);
  assert.equal(platformScore({ os: 'linux', architecture: 'arm', variant: 'v8' }, armv7), -1);
  const amd64 = { os: 'linux', architecture: 'amd64' };
  assert.equal(platformScore({ os: 'linux', architecture: 'amd64', variant: 'v3' }, amd64), -1);
  assert.equal(platformScore({ os: 'windows', architecture: 'amd64' }, amd64), -1);
});

test('picks the platform, skipping attestations, unknown platforms and artifacts', () => {
  const attestation = entry({ os: 'unknown', architecture: 'unknown' }, { annotations: { 'vnd.docker.reference.type': 'attestation-manifest' } });
  const amd = entry({ os: 'linux', architecture: 'amd64' });
  const arm64 = entry({ os: 'linux', architecture: 'arm64', variant: 'v8' });
  const armv6 = entry({ os: 'linux', architecture: 'arm', variant: 'v6' });
  const armv7 = entry({ os: 'linux', architecture: 'arm', variant: 'v7' });
  const artifact = entry({ os: 'linux', architecture: 'amd64' }, { mediaType: 'application/vnd.example.sbom+json' });
  const list = [artifact, attestation, armv6, armv7, arm64, amd];
  assert.equal(selectPlatformManifest(list, { os: 'linux', architecture: 'amd64' }), amd);
  assert.equal(selectPlatformManifest(list, { os: 'linux', architecture: 'arm64', variant: 'v8' }), arm64);
  assert.equal(selectPlatformManifest(list, { os: 'linux', architecture: 'arm', variant: 'v7' }), armv7);
  assert.equal(selectPlatformManifest([armv6, amd], { os: 'linux', architecture: 'arm', variant: 'v7' }), armv6);
  assert.equal(selectPlatformManifest([attestation, entry(undefined)], { os: 'linux', architecture: 'amd64' }), undefined);
});

test('arm64 prefers v8 or no variant; amd64 without a variant never takes a v3 build', () => {
  const plain = entry({ os: 'linux', architecture: 'arm64' }, { mediaType: DOCKER_MANIFEST });
  const v9 = entry({ os: 'linux', architecture: 'arm64', variant: 'v9' });
  assert.equal(selectPlatformManifest([v9, plain], { os: 'linux', architecture: 'arm64', variant: 'v8' }), plain);
  const amdV3 = entry({ os: 'linux', architecture: 'amd64', variant: 'v3' });
  const amdPlain = entry({ os: 'linux', architecture: 'amd64' });
  assert.equal(selectPlatformManifest([amdV3, amdPlain], { os: 'linux', architecture: 'amd64' }), amdPlain);
  assert.equal(selectPlatformManifest([amdPlain, amdV3], { os: 'linux', architecture: 'amd64', variant: 'v3' }), amdV3);
  assert.equal(selectPlatformManifest([amdV3], { os: 'linux', architecture: 'amd64' }), undefined);
});

test('on a tie the earliest entry wins', () => {
  const first = entry({ os: 'linux', architecture: 'amd64' });
  const second = entry({ os: 'linux', architecture: 'amd64' });
  assert.equal(selectPlatformManifest([first, second], { os: 'linux', architecture: 'amd64' }), first);
});
