/**
 * The image store the calls' unit tests run against: a real writer store in a temporary
 * directory, and images made of a config blob alone (no layer to unpack, so no tool runs).
 */
import { createHash } from 'node:crypto';
import { promises as fs } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createLogger } from '@skiff/common';
import { ImageStore, type ImageRecord } from '@skiff/image-store';
import { imageServiceDefinition, type ImageServiceDefinition } from '@skiff/proto';

export interface UnitStore {
  store: ImageStore;
  /** A config-only image recorded under `tag`. */
  addImage(tag: string): Promise<ImageRecord>;
  cleanup(): Promise<void>;
}

export async function unitStore(): Promise<UnitStore> {
  const dir = await fs.mkdtemp(join(tmpdir(), 'skiff-image-call-'));
  const store = await ImageStore.open(join(dir, 'images'), { logger: createLogger('image-svc', 'fatal'), writer: true, syncFilesystems: async () => undefined });
  return {
    store,
    async addImage(tag) {
      const config = Buffer.from(JSON.stringify({ architecture: 'amd64', os: 'linux', config: { Env: ['PATH=/bin'] }, rootfs: { type: 'layers', diff_ids: [] }, comment: tag }));
      const digest = `sha256:${createHash('sha256').update(config).digest('hex')}`;
      await store.putBlob({ mediaType: 'application/vnd.oci.image.config.v1+json', digest, size: config.length }, config);
      return store.addImage({
        id: digest,
        repoTags: [tag],
        repoDigests: [],
        manifestDigest: `sha256:${createHash('sha256').update(`manifest of ${digest}`).digest('hex')}`,
        configSize: config.length,
        layers: [],
        size: config.length,
        user: '',
        pinned: false,
        annotations: {},
        platform: { os: 'linux', architecture: 'amd64' },
      });
    },
    async cleanup() {
      await store.close();
      await fs.rm(dir, { recursive: true, force: true });
    },
  };
}

/** Runs `test` against a fresh store, removed afterwards whatever the outcome. */
export async function withUnitStore(test: (u: UnitStore) => Promise<void>): Promise<void> {
  const u = await unitStore();
  try {
    await test(u);
  } finally {
    await u.cleanup();
  }
}

/** A request as the server receives it: `fields` encoded and decoded again, so every field has its protobuf default. */
export function imageRequest<Decoded>(method: keyof ImageServiceDefinition, fields: object): Decoded {
  const definition = imageServiceDefinition[method] as unknown as { requestSerialize: (r: object) => Buffer; requestDeserialize: (b: Buffer) => Decoded };
  return definition.requestDeserialize(definition.requestSerialize(fields));
}
