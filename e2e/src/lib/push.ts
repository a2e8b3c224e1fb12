/**
 * Pushes built images and indexes to a registry.
 *
 *   interface PushOptions {
 *     credentials?: Credentials     basic auth, or the account used for the token flow
 *     client?: RegistryClient       reuse a client (and its token cache)
 *     chunkSize?: number            chunked (PATCH) blob uploads; monolithic when omitted
 *     byDigest?: boolean            also PUT every manifest by its digest
 *   }
 *   pushImage(registry, repo, tag | undefined, content, options?): Promise<string>
 *       uploads missing blobs, then child manifests (by digest) for an index, then the
 *       top manifest by tag (by digest when tag is undefined); returns its digest,
 *       checked against the registry's Docker-Content-Digest
 *   pushBlobs(client, repo, image, options?): Promise<void>
 *   registryUrl(registry): string
 */
import type { Credentials } from './htpasswd.js';
import type { Image, ImageContent } from './oci-image.js';
import { readBlob } from './blob-dir.js';
import { RegistryClient } from './registry-client.js';

export interface PushOptions {
  credentials?: Credentials;
  client?: RegistryClient;
  chunkSize?: number;
  byDigest?: boolean;
}

export function registryUrl(registry: string | { url: string }): string {
  return typeof registry === 'string' ? registry : registry.url;
}

export async function pushBlobs(client: RegistryClient, repo: string, image: Image, options: PushOptions = {}): Promise<void> {
  for (const blob of [...image.layers, image.config]) {
    await client.uploadBlob(repo, blob, { chunkSize: options.chunkSize });
  }
}

async function putManifest(
  client: RegistryClient,
  repo: string,
  reference: string,
  blob: { digest: string; mediaType: string; path: string },
): Promise<string> {
  const body = await readBlob(blob);
  const digest = await client.putManifest(repo, reference, body, blob.mediaType);
  if (digest !== blob.digest) {
    throw new Error(`registry stored manifest ${reference} as ${digest}, expected ${blob.digest}`);
  }
  return digest;
}

export async function pushImage(
  registry: string | { url: string },
  repo: string,
  tag: string | undefined,
  content: ImageContent,
  options: PushOptions = {},
): Promise<string> {
  const client = options.client ?? new RegistryClient(registryUrl(registry), { credentials: options.credentials });
  const images = content.kind === 'image' ? [content] : content.images;
  for (const image of images) await pushBlobs(client, repo, image, options);
  if (content.kind === 'index') {
    for (const image of content.images) await putManifest(client, repo, image.manifest.digest, image.manifest);
  }
  const top = content.kind === 'image' ? content.manifest : content.index;
  if (tag === undefined || options.byDigest) await putManifest(client, repo, top.digest, top);
  if (tag !== undefined) await putManifest(client, repo, tag, top);
  return top.digest;
}
