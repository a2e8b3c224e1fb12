/**
 * Docker image manifest v2 schema 1, signed the way libtrust does ("prettyjws").
 *
 *   interface Schema1Options { name, tag, architecture?, layerDigests (base first), config? }
 *   buildSignedSchema1Manifest(options): Buffer
 *
 * The payload is JSON indented by three spaces; an ES256 signature over
 * "<protected>.<base64url(payload)>" is spliced in as a "signatures" member, with
 * formatLength/formatTail in the protected header so verifiers can recover the
 * payload. The registry accepts such manifests only with schema1 compatibility
 * enabled (startRegistry({ schema1: true })) and once the layer blobs exist.
 */
import { generateKeyPairSync, sign } from 'node:crypto';
import { DEFAULT_CREATED, type ContainerConfig } from './oci-image.js';
import { sha256Hex } from './sha256.js';

export interface Schema1Options {
  name: string;
  tag: string;
  architecture?: string;
  /** Layer blob digests, base layer first. */
  layerDigests: string[];
  config?: ContainerConfig;
}

const INDENT = '   ';

export function buildSignedSchema1Manifest(options: Schema1Options): Buffer {
  const ids = options.layerDigests.map((digest, i) => sha256Hex(`${i}:${digest}`));
  const history = options.layerDigests.map((_, i) => {
    const v1: Record<string, unknown> = { id: ids[i], created: DEFAULT_CREATED };
    if (i > 0) v1.parent = ids[i - 1];
    if (i === options.layerDigests.length - 1) {
      v1.architecture = options.architecture ?? 'amd64';
      v1.os = 'linux';
      v1.config = options.config ?? { Cmd: ['sh'] };
    } else {
      v1.container_config = { Cmd: [`layer ${i + 1}`] };
    }
    return { v1Compatibility: JSON.stringify(v1) };
  });
  const manifest = {
    schemaVersion: 1,
    name: options.name,
    tag: options.tag,
    architecture: options.architecture ?? 'amd64',
    fsLayers: [...options.layerDigests].reverse().map((blobSum) => ({ blobSum })),
    history: history.reverse(),
  };
  const payload = Buffer.from(JSON.stringify(manifest, null, INDENT), 'utf8');
  // Everything up to the last member; the closing "\n}" is the tail.
  const formatLength = payload.lastIndexOf('}') - 1;
  const formatTail = payload.subarray(formatLength);

  const { privateKey, publicKey } = generateKeyPairSync('ec', { namedCurve: 'P-256' });
  const jwk = publicKey.export({ format: 'jwk' });
  const protectedHeader = Buffer.from(
    JSON.stringify({ formatLength, formatTail: formatTail.toString('base64url'), time: DEFAULT_CREATED }),
  ).toString('base64url');
  const signingInput = Buffer.from(`${protectedHeader}.${payload.toString('base64url')}`);
  const signature = sign('sha256', signingInput, { key: privateKey, dsaEncoding: 'ieee-p1363' });
  const signatures = [
    {
      header: { jwk: { crv: jwk.crv, kty: jwk.kty, x: jwk.x, y: jwk.y }, alg: 'ES256' },
      signature: signature.toString('base64url'),
      protected: protectedHeader,
    },
  ];
  const signaturesJson = JSON.stringify(signatures, null, INDENT).replace(/\n/g, `\n${INDENT}`);
  return Buffer.concat([
    payload.subarray(0, formatLength),
    Buffer.from(`,\n${INDENT}"signatures": ${signaturesJson}\n}`, 'utf8'),
  ]);
}
