import { promises as fs } from 'node:fs';
import { errorMessage } from '@skiff/common';
import type { Logger } from '@skiff/common';

/**
 * The CRI log file a CreateContainer makes goes when the create is undone. A kubelet that finds
 * no status for a container numbers its next attempt after the highest `<n>.log` in the
 * container's log directory, so an empty file that a failed or interrupted create left there
 * would turn the retry into restart 1.
 *
 * Before the file is made, its path is noted in the container's directory (`marker`) if nothing
 * is at the path yet. The note is not synced: it only has to outlive a killed runtime-svc, whose
 * recovery removes the directories of creates that never saved their record.
 */
export async function noteNewLogFile(marker: string, logPath: string): Promise<boolean> {
  const existing = await fs.lstat(logPath).catch((err: NodeJS.ErrnoException) => {
    if (err.code === 'ENOENT') return undefined;
    throw err;
  });
  if (existing) return false;
  await fs.writeFile(marker, logPath, { mode: 0o600 });
  return true;
}

/** The log path noted in `marker` by noteNewLogFile, if any. */
export async function notedLogFile(marker: string): Promise<string | undefined> {
  const text = await fs.readFile(marker, 'utf8').catch(() => '');
  return text.startsWith('/') ? text : undefined;
}

/**
 * Removes a log file that a create made and nothing wrote to: a regular file, still empty (a
 * container that never started has no output). Anything else at the path is left alone.
 */
export async function removeUnwrittenLogFile(logPath: string, log: Logger): Promise<void> {
  try {
    const st = await fs.lstat(logPath);
    if (!st.isFile() || st.size !== 0) return;
    await fs.unlink(logPath);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return;
    log.warn({ logPath, err: errorMessage(err) }, 'the empty log file of a container whose create was undone could not be removed; the kubelet will count its retry as a restart');
  }
}
