import { promises as fs } from 'node:fs';
import { syncFilesystems } from './unpack/special-files.js';

/**
 * Content is published (renamed into blobs/ and snapshots/) before it is durable, and made durable
 * in batches: one syncfs of the store's filesystem(s) before an image record that refers to it is
 * written. Until then no record refers to it, so after a power loss the writer's next open removes
 * it as unreferenced (it may be incomplete on disk); a process that is merely killed loses nothing,
 * the page cache outlives it.
 *
 * Callers that published content and need it durable call `flush()`: it returns once a sync that
 * started after their content was published has finished. Concurrent callers share syncs.
 */
export class DurabilityBatch {
  /** Bumped each time content is published without being synced. */
  private publications = 0;
  /** Publications up to this number are durable. */
  private synced = 0;
  private running: Promise<void> | undefined;

  constructor(
    private readonly dirs: readonly string[],
    private readonly sync: (paths: readonly string[]) => Promise<void> = syncFilesystems,
  ) {}

  /** Records that content was just published unsynced. */
  notePublished(): void {
    this.publications++;
  }

  async flush(): Promise<void> {
    const target = this.publications;
    while (this.synced < target) {
      if (this.running) {
        await this.running.catch(() => undefined);
        continue;
      }
      this.running = this.syncNow().finally(() => (this.running = undefined));
      await this.running;
    }
  }

  private async syncNow(): Promise<void> {
    const upTo = this.publications;
    await this.sync(await oneDirPerFilesystem(this.dirs));
    this.synced = Math.max(this.synced, upTo);
  }
}

async function oneDirPerFilesystem(dirs: readonly string[]): Promise<string[]> {
  const seen = new Set<number>();
  const chosen: string[] = [];
  for (const dir of dirs) {
    const { dev } = await fs.stat(dir);
    if (seen.has(dev)) continue;
    seen.add(dev);
    chosen.push(dir);
  }
  return chosen;
}
