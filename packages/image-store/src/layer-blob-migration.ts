import { promises as fs } from 'node:fs';
import { dirname } from 'node:path';
import { atomicWriteJson, errnoCode, removeAtomicWriteDebris, type Logger } from '@skiff/common';
import { HEX_NAME, type StoreLayout } from './store-layout.js';
import type { ImageRecord, SnapshotMeta } from './types.js';

/**
 * Brings a store from the format that kept layer blobs to the one that does not: each stored layer
 * blob's digest is added to the meta.json of the snapshots that images say it unpacks to (replaced
 * atomically, synced), and the blobs, which no record keeps any more, are then left to garbage
 * collection. Crash-safe and idempotent: a blob is deleted only after every meta.json naming it is
 * durable, and a migration cut short finds the blobs still there and does the rest.
 * Resolves with how many meta.json files it rewrote.
 */
export async function recordLayerBlobsInSnapshots(layout: StoreLayout, images: readonly ImageRecord[], logger: Logger): Promise<number> {
  const stored = new Set((await fs.readdir(layout.blobsDir)).filter((name) => HEX_NAME.test(name)).map((hex) => `sha256:${hex}`));
  const digestsByChain = new Map<string, Set<string>>();
  for (const image of images) {
    for (const layer of image.layers) {
      if (!stored.has(layer.digest)) continue;
      let digests = digestsByChain.get(layer.chainId);
      if (!digests) digestsByChain.set(layer.chainId, (digests = new Set()));
      digests.add(layer.digest);
    }
  }
  let rewritten = 0;
  for (const [chainId, digests] of digestsByChain) {
    const path = layout.snapshotMetaPath(chainId);
    let meta: SnapshotMeta;
    try {
      meta = JSON.parse(await fs.readFile(path, 'utf8')) as SnapshotMeta;
    } catch (err) {
      if (errnoCode(err) === 'ENOENT') continue; // an image with a missing snapshot is pulled again
      throw err;
    }
    const known = new Set(meta.blobDigests ?? []);
    const added = [...digests].filter((digest) => !known.has(digest));
    if (added.length === 0) continue;
    await removeAtomicWriteDebris(dirname(path)); // a rewrite that a crash cut short
    await atomicWriteJson(path, { ...meta, blobDigests: [...known, ...added] }, 0o600);
    rewritten++;
  }
  if (rewritten > 0) logger.info({ snapshots: rewritten }, 'image store migrated: layer blob digests recorded in their snapshots; the blobs are collected');
  return rewritten;
}
