import { promises as fs } from 'node:fs';
import { atomicWriteJson, errnoCode, errorMessage } from '@skiff/common';
import { ImageIndex } from './image-index.js';
import type { ImageRecord } from './types.js';

interface IndexFileContent {
  version: number;
  images: ImageRecord[];
}

function parseIndex(path: string, text: string): ImageIndex {
  let content: IndexFileContent;
  try {
    content = JSON.parse(text) as IndexFileContent;
  } catch (err) {
    throw new Error(`image index ${path} is not valid JSON (${errorMessage(err)}); move it aside to start with an empty image store`);
  }
  if (content === null || typeof content !== 'object' || content.version !== 1 || !Array.isArray(content.images)) {
    throw new Error(`image index ${path} has an unknown format (expected {"version":1,"images":[...]})`);
  }
  return ImageIndex.fromRecords(content.images);
}

/** Loads the index; a missing file is an empty store. */
export async function loadIndexFile(path: string): Promise<ImageIndex> {
  let text: string;
  try {
    text = await fs.readFile(path, 'utf8');
  } catch (err) {
    if (errnoCode(err) === 'ENOENT') return ImageIndex.empty();
    throw err;
  }
  return parseIndex(path, text);
}

/** One atomic replace: readers see the old index or the new one, never a mix. */
export async function saveIndexFile(path: string, index: ImageIndex): Promise<void> {
  await atomicWriteJson(path, index.toJSON(), 0o600);
}

/**
 * A reader's view of the index file: each call costs one stat, and the file is parsed again only
 * when it was replaced (the writer always renames a new file in, so the inode changes).
 */
export class IndexFileWatcher {
  private index = ImageIndex.empty();
  private key = 'absent';
  private reloading: Promise<ImageIndex> | undefined;

  constructor(private readonly path: string) {}

  async current(): Promise<ImageIndex> {
    const key = await this.statKey();
    if (key === this.key) return this.index;
    this.reloading ??= this.reload().finally(() => (this.reloading = undefined));
    return this.reloading;
  }

  private async statKey(): Promise<string> {
    try {
      const stats = await fs.stat(this.path, { bigint: true });
      return `${stats.dev}:${stats.ino}:${stats.size}:${stats.mtimeNs}:${stats.ctimeNs}`;
    } catch (err) {
      if (errnoCode(err) === 'ENOENT') return 'absent';
      throw err;
    }
  }

  private async reload(): Promise<ImageIndex> {
    let handle: fs.FileHandle;
    try {
      handle = await fs.open(this.path, 'r');
    } catch (err) {
      if (errnoCode(err) !== 'ENOENT') throw err;
      this.index = ImageIndex.empty();
      this.key = 'absent';
      return this.index;
    }
    try {
      // Key and content from the same open file, so a replace in between cannot pair them wrongly.
      const stats = await handle.stat({ bigint: true });
      const text = await handle.readFile('utf8');
      this.index = parseIndex(this.path, text);
      this.key = `${stats.dev}:${stats.ino}:${stats.size}:${stats.mtimeNs}:${stats.ctimeNs}`;
      return this.index;
    } finally {
      await handle.close();
    }
  }
}
