import { promises as fs } from 'node:fs';
import { atomicWriteJson, readJsonIfExists } from '@skiff/common';
import type { RuntimePaths } from '../daemon/paths.js';
import { errorMessage } from '../util/errno.js';
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
 * crash each holds either the previous or the new content.
 */
export class RecordStore {
  constructor(private readonly paths: RuntimePaths) {}

  async init(): Promise<void> {
    for (const dir of [this.paths.sandboxesDir, this.paths.containersDir]) await fs.mkdir(dir, { recursive: true, mode: 0o700 });
  }

  async saveSandbox(record: SandboxRecord): Promise<void> {
    await atomicWriteJson(this.paths.sandbox(record.id).record, record);
  }

  async saveContainer(record: ContainerRecord): Promise<void> {
    await atomicWriteJson(this.paths.container(record.id).record, record);
  }

  async loadAll(): Promise<LoadedRecords> {
    const out: LoadedRecords = { sandboxes: [], containers: [], strayDirs: [] };
    for (const id of await listIds(this.paths.sandboxesDir)) {
      const p = this.paths.sandbox(id);
      const loaded = await readRecord<SandboxRecord>(p.record, id);
      if ('record' in loaded) out.sandboxes.push(loaded.record);
      else out.strayDirs.push({ kind: 'sandbox', id, dir: p.dir, problem: loaded.problem });
    }
    for (const id of await listIds(this.paths.containersDir)) {
      const p = this.paths.container(id);
      const loaded = await readRecord<ContainerRecord>(p.record, id);
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

async function readRecord<T extends { id: string; version: number }>(path: string, id: string): Promise<{ record: T } | { problem: string }> {
  let record: T | undefined;
  try {
    record = await readJsonIfExists<T>(path);
  } catch (err) {
    return { problem: `unreadable record ${path}: ${errorMessage(err)}` };
  }
  if (!record) return { problem: `no record at ${path}` };
  if (record.version !== 1 || record.id !== id) return { problem: `record ${path} has an unknown format or a different id` };
  return { record };
}
