/**
 * A content-addressed directory of blobs: <root>/sha256/<hex>.
 *
 *   interface StoredBlob { mediaType, digest, size, path }
 *   blobPath(root, digest): string
 *   writeBlob(root, data, mediaType): Promise<StoredBlob>      small in-memory content
 *   adoptBlobFile(root, tempPath, digest): Promise<string>     moves a finished temp file into place
 *   newTempPath(root): string                                  a unique temp name inside root
 *   readBlob(blob): Promise<Buffer>
 *   openBlob(blob): Readable
 *
 * Files are moved into place with rename, so concurrent builders of the same
 * content (other test processes sharing a cache) never see partial blobs.
 */
import { randomBytes } from 'node:crypto';
import { createReadStream } from 'node:fs';
import { mkdir, readFile, rename, rm, stat, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { Readable } from 'node:stream';
import { digestHex, sha256Digest } from './sha256.js';

export interface StoredBlob {
  mediaType: string;
  digest: string;
  size: number;
  /** The blob's bytes on disk. */
  path: string;
}

export function blobPath(root: string, digest: string): string {
  return join(root, 'sha256', digestHex(digest));
}

export function newTempPath(root: string): string {
  return join(root, `.tmp-${process.pid}-${randomBytes(6).toString('hex')}`);
}

async function exists(path: string): Promise<boolean> {
  try {
    await stat(path);
    return true;
  } catch {
    return false;
  }
}

export async function adoptBlobFile(root: string, tempPath: string, digest: string): Promise<string> {
  const target = blobPath(root, digest);
  await mkdir(join(root, 'sha256'), { recursive: true });
  if (await exists(target)) {
    await rm(tempPath, { force: true });
  } else {
    await rename(tempPath, target);
  }
  return target;
}

export async function writeBlob(root: string, data: Buffer, mediaType: string): Promise<StoredBlob> {
  const digest = sha256Digest(data);
  const target = blobPath(root, digest);
  if (!(await exists(target))) {
    await mkdir(root, { recursive: true });
    const temp = newTempPath(root);
    await writeFile(temp, data);
    await adoptBlobFile(root, temp, digest);
  }
  return { mediaType, digest, size: data.length, path: target };
}

export function readBlob(blob: Pick<StoredBlob, 'path'>): Promise<Buffer> {
  return readFile(blob.path);
}

export function openBlob(blob: Pick<StoredBlob, 'path'>): Readable {
  return createReadStream(blob.path);
}
