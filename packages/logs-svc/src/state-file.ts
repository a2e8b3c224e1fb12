import { atomicWriteJson, readJsonIfExists } from '@skiff/common/core';
import type { JournalPosition } from './journal-position.js';

/** What logs-svc has durably written for one container. */
export interface SavedContainerLog {
  path: string;
  /** The inode of the file the bytes went to; a different file at the path is not truncated. */
  inode: number;
  /** Bytes of that file that belong to entries up to the saved cursor. */
  size: number;
  /**
   * Set while the container's earlier output is being read back from the journal, up to this
   * position: a restart cuts the file back to `size` and reads it back again.
   */
  readBackUntil?: JournalPosition;
}

/**
 * The journal position and the files' sizes, saved together after the files were synced: on a
 * restart each file is cut back to its size and reading resumes after the cursor, so nothing is
 * written twice or lost.
 */
export interface LogsState {
  version: 1;
  /** The last journal entry whose output is in the files; absent until the first one. */
  cursor?: string;
  /** Where reading starts while there is no cursor: logs-svc's first start (seconds since the epoch). */
  sinceSeconds: number;
  containers: Record<string, SavedContainerLog>;
}

function isState(v: unknown): v is LogsState {
  if (typeof v !== 'object' || v === null) return false;
  const s = v as Partial<LogsState>;
  return s.version === 1 && typeof s.sinceSeconds === 'number' && typeof s.containers === 'object' && s.containers !== null;
}

export async function loadState(file: string): Promise<LogsState | undefined> {
  const raw = await readJsonIfExists<unknown>(file);
  if (raw === undefined) return undefined;
  if (!isState(raw)) throw new Error(`${file} is not a logs-svc state file; move it away to start afresh`);
  return raw;
}

export async function saveState(file: string, state: LogsState): Promise<void> {
  await atomicWriteJson(file, state);
}
