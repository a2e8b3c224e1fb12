import { isDigest, isImageId, normalizeReference, parseReference, tagReference, toImageId, InvalidReferenceError } from '@skiff/reference';
import type { ImageRecord, LayerRecord, Platform } from './types.js';

export type ImageRecordInput = Omit<ImageRecord, 'createdAt'> & { createdAt?: string };

export interface IndexMatch {
  image: ImageRecord;
  /** How the reference matched: only a tag match can be undone by untagging. */
  by: 'id' | 'tag' | 'digest';
  /** The normalized tag, when matched by tag. */
  tag?: string;
}

function deepFreeze<T>(value: T): T {
  if (value !== null && typeof value === 'object' && !Object.isFrozen(value)) {
    Object.freeze(value);
    for (const inner of Object.values(value as Record<string, unknown>)) deepFreeze(inner);
  }
  return value;
}

function union(first: readonly string[], second: readonly string[]): string[] {
  return [...new Set([...first, ...second])];
}

export function normalizeTag(tag: string): string {
  const ref = normalizeReference(tag);
  const out = tagReference(ref);
  if (out === undefined || ref.digest !== undefined) throw new InvalidReferenceError(tag, 'a repo tag must be "name:tag" without a digest');
  return out;
}

export function normalizeRepoDigest(repoDigest: string): string {
  const ref = parseReference(repoDigest);
  if (ref.digest === undefined) throw new InvalidReferenceError(repoDigest, 'a repo digest must be "name@sha256:<hex>"');
  return `${ref.name}@${ref.digest}`;
}

function repositoryOf(reference: string): string {
  return parseReference(reference).name;
}

function copyLayer(layer: LayerRecord): LayerRecord {
  return { digest: layer.digest, mediaType: layer.mediaType, size: layer.size, diffId: layer.diffId, chainId: layer.chainId };
}

function copyPlatform(platform: Platform): Platform {
  const out: Platform = { os: platform.os, architecture: platform.architecture };
  if (platform.variant !== undefined) out.variant = platform.variant;
  return out;
}

/** A validated, normalized, detached copy of what the caller passed. */
export function normalizeRecord(input: ImageRecordInput): ImageRecordInput {
  for (const [field, value] of [['id', input.id], ['manifestDigest', input.manifestDigest]] as const) {
    if (!isDigest(value)) throw new TypeError(`image record ${field} ${JSON.stringify(value)} is not a digest`);
  }
  if (!Array.isArray(input.layers)) throw new TypeError('image record layers must be an array');
  for (const layer of input.layers) {
    for (const field of ['digest', 'diffId', 'chainId'] as const) {
      if (!isDigest(layer[field])) throw new TypeError(`image ${input.id} layer ${field} ${JSON.stringify(layer[field])} is not a digest`);
    }
  }
  const out: ImageRecordInput = {
    id: input.id,
    repoTags: union([], (input.repoTags ?? []).map(normalizeTag)),
    repoDigests: union([], (input.repoDigests ?? []).map(normalizeRepoDigest)),
    manifestDigest: input.manifestDigest,
    configSize: input.configSize,
    layers: input.layers.map(copyLayer),
    size: input.size,
    user: input.user ?? '',
    pinned: Boolean(input.pinned),
    annotations: { ...(input.annotations ?? {}) },
    platform: copyPlatform(input.platform),
  };
  if (input.createdAt !== undefined) out.createdAt = input.createdAt;
  return out;
}

/**
 * An immutable snapshot of the image records with lookup tables. Changes produce a new index,
 * which the writer persists before swapping it in, so memory never runs ahead of disk.
 */
export class ImageIndex {
  private readonly byId = new Map<string, ImageRecord>();
  private readonly byTag = new Map<string, ImageRecord>();
  private readonly byRepoDigest = new Map<string, ImageRecord>();

  private constructor(readonly images: readonly ImageRecord[]) {
    for (const image of images) {
      this.byId.set(image.id, image);
      for (const tag of image.repoTags) this.byTag.set(tag, image);
      for (const repoDigest of image.repoDigests) this.byRepoDigest.set(repoDigest, image);
    }
  }

  static empty(): ImageIndex {
    return new ImageIndex([]);
  }

  static fromRecords(records: ImageRecord[]): ImageIndex {
    return new ImageIndex(Object.freeze(records.map((record) => deepFreeze(record))));
  }

  getById(id: string): ImageRecord | undefined {
    return this.byId.get(id);
  }

  /**
   * By image id (with or without "sha256:"), by tag (normalized: "busybox" is
   * docker.io/library/busybox:latest) or by repo digest. Throws InvalidReferenceError.
   */
  find(reference: string): IndexMatch | undefined {
    if (isImageId(reference)) {
      const image = this.byId.get(toImageId(reference));
      return image && { image, by: 'id' };
    }
    const ref = normalizeReference(reference);
    if (ref.digest !== undefined) {
      const image = this.byRepoDigest.get(`${ref.name}@${ref.digest}`) ?? this.findByManifest(ref.name, ref.digest);
      return image && { image, by: 'digest' };
    }
    const tag = `${ref.name}:${ref.tag}`;
    const image = this.byTag.get(tag);
    return image && { image, by: 'tag', tag };
  }

  /** "name@<platform manifest digest>" also names an image pulled through an index. */
  private findByManifest(name: string, digest: string): ImageRecord | undefined {
    return this.images.find(
      (image) => image.manifestDigest === digest && [...image.repoTags, ...image.repoDigests].some((r) => repositoryOf(r) === name),
    );
  }

  /**
   * Adds a record, or merges it into the one with the same id (tags and digests are united,
   * createdAt kept). Tags it carries are taken from any other image that had them.
   */
  withImage(input: ImageRecordInput, now: Date): { index: ImageIndex; image: ImageRecord } {
    const existing = this.byId.get(input.id);
    const newTags = new Set(input.repoTags);
    const record: ImageRecord = {
      ...input,
      repoTags: union(existing?.repoTags ?? [], input.repoTags),
      repoDigests: union(existing?.repoDigests ?? [], input.repoDigests),
      createdAt: existing?.createdAt ?? input.createdAt ?? now.toISOString(),
    };
    const images: ImageRecord[] = [];
    for (const image of this.images) {
      if (image.id === input.id) continue;
      if (image.repoTags.some((tag) => newTags.has(tag))) images.push({ ...image, repoTags: image.repoTags.filter((tag) => !newTags.has(tag)) });
      else images.push(image);
    }
    images.push(record);
    const index = ImageIndex.fromRecords(images);
    return { index, image: index.getById(record.id)! };
  }

  withoutImage(id: string): ImageIndex {
    return ImageIndex.fromRecords(this.images.filter((image) => image.id !== id));
  }

  withoutTag(id: string, tag: string): ImageIndex {
    return ImageIndex.fromRecords(this.images.map((image) => (image.id === id ? { ...image, repoTags: image.repoTags.filter((t) => t !== tag) } : image)));
  }

  toJSON(): { version: 1; images: readonly ImageRecord[] } {
    return { version: 1, images: this.images };
  }
}
