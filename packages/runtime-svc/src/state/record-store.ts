import { promises as fs } from 'node:fs';
import { atomicWriteJson, errorMessage, fsyncDir, pathExists, readJsonIfExists } from '@skiff/common';
import type { RuntimePaths } from '../daemon/paths.js';
import { FULL_ID } from './ids.js';
import type { ContainerRecord, SandboxRecord } from './records.js';

export interface LoadedRecords {
  sandboxes: SandboxRecord[];
  containers: ContainerRecord[];
  /** Directories with no readable record: debris of a create cut short before its first write. */
  strayDirs: { kind: 'sandbox' | 'container'; id: string; dir: string; problem: string }[];
}

/**
 * Records live in one directory per sandbox / container, next to everything else the runtime made
 * for it, and are replaced atomically (temp file, fsync, rename, fsync of the directory): after a
 * crash each holds either the previous or the new content. A removal is marked by an empty file
 * beside the record instead (one fsync of the directory, half the cost of a rewrite), which
 * overrides the record's phase when it is read back.
 */
export class RecordStore {
  /** Per record, the write under way: writes of one record land on disk in the order they were asked for. */
  private readonly writes = new Map<string, Promise<void>>();

  constructor(private readonly paths: RuntimePaths) {}

  /**
   * Queues a write of the record as it is now. The content is taken at once, so a later change
   * queued after this one is also written after it, whatever the timing of the disk.
   */
  private save(path: string, id: string, record: SandboxRecord | ContainerRecord): Promise<void> {
    const content = JSON.parse(JSON.stringify(record)) as unknown;
    const previous = this.writes.get(id) ?? Promise.resolve();
    const write = previous.catch(() => undefined).then(() => atomicWriteJson(path, content));
    this.writes.set(id, write);
    void write.finally(() => {
      if (this.writes.get(id) === write) this.writes.delete(id);
    }).catch(() => undefined);
    return write;
  }

  async init(): Promise<void> {
    for (const dir of [this.paths.sandboxesDir, this.paths.containersDir]) await fs.mkdir(dir, { recursive: true, mode: 0o700 });
  }

  async saveSandbox(record: SandboxRecord): Promise<void> {
    await this.save(this.paths.sandbox(record.id).record, record.id, record);
  }

  async saveContainer(record: ContainerRecord): Promise<void> {
    await this.save(this.paths.container(record.id).record, record.id, record);
  }

  /** Sets the record's phase to removing and makes that durable with the removal marker. */
  async markSandboxRemoving(record: SandboxRecord): Promise<void> {
    record.phase = 'removing';
    const paths = this.paths.sandbox(record.id);
    await markRemoving(paths.removing, paths.dir);
  }

  /** Sets the record's phase to removing and makes that durable with the removal marker. */
  async markContainerRemoving(record: ContainerRecord): Promise<void> {
    record.phase = 'removing';
    const paths = this.paths.container(record.id);
    await markRemoving(paths.removing, paths.dir);
  }

  async loadAll(): Promise<LoadedRecords> {
    const out: LoadedRecords = { sandboxes: [], containers: [], strayDirs: [] };
    for (const id of await listIds(this.paths.sandboxesDir)) {
      const p = this.paths.sandbox(id);
      const loaded = await readRecord<SandboxRecord>(p.record, id, p.removing);
      if ('record' in loaded) out.sandboxes.push(loaded.record);
      else out.strayDirs.push({ kind: 'sandbox', id, dir: p.dir, problem: loaded.problem });
    }
    for (const id of await listIds(this.paths.containersDir)) {
      const p = this.paths.container(id);
      const loaded = await readRecord<ContainerRecord>(p.record, id, p.removing);
      if ('record' in loaded) out.containers.push(loaded.record);
      else out.strayDirs.push({ kind: 'container', id, dir: p.dir, problem: loaded.problem });
    }
    return out;
  }
}

async function listIds(dir: string): Promise<string[]> {
  try {
    return (await fs.readdir(dir)).filter((name) => FULL_ID.test(name)).sort();
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return [];
    throw err;
  }
}

/**
 * Removes a sandbox's or container's directory, its record first: a removal cut short then leaves
 * a directory without a record (debris that start-up recovery removes), never a record whose
 * removal marker has gone.
 */
export async function removeRecordDirectory(paths: { dir: string; record: string }): Promise<void> {
  await fs.rm(paths.record, { force: true });
  await fs.rm(paths.dir, { recursive: true, force: true });
}

async function markRemoving(marker: string, dir: string): Promise<void> {
  await (await fs.open(marker, 'w', 0o600)).close();
  await fsyncDir(dir);
}

async function readRecord<T extends { id: string; version: number; phase: string }>(path: string, id: string, removing: string): Promise<{ record: T } | { problem: string }> {
  let record: T | undefined;
  try {
    record = await readJsonIfExists<T>(path);
  } catch (err) {
    return { problem: `unreadable record ${path}: ${errorMessage(err)}` };
  }
  if (!record) return { problem: `no record at ${path}` };
  if (record.version !== 1 || record.id !== id) return { problem: `record ${path} has an unknown format or a different id` };
  if (await pathExists(removing)) record.phase = 'removing';
  return { record };
}
