import { promises as fs } from 'node:fs';
import { join } from 'node:path';
import { pollUntil } from '@skiff/common';

/**
 * conmon writes the container's exit status to `<exitDir>/<id>` when the container ends:
 * the exit code, 128+signal when killed by a signal, or -1 when it could not tell.
 */
export function exitFilePath(exitDir: string, id: string): string {
  return join(exitDir, id);
}

/** The ids with an exit file, from one read of the directory (for listings). */
export async function idsWithExitFiles(exitDir: string): Promise<Set<string>> {
  return new Set(await fs.readdir(exitDir).catch(() => [] as string[]));
}

/** The exit code, or undefined while the container has not exited (no file yet). */
export async function readExitCode(exitDir: string, id: string): Promise<number | undefined> {
  let text: string;
  try {
    text = await fs.readFile(exitFilePath(exitDir, id), 'utf8');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw err;
  }
  const code = Number.parseInt(text.trim(), 10);
  // conmon writes with g_file_set_contents (temp file + rename), so a partial read cannot happen.
  if (!Number.isInteger(code)) throw new Error(`exit file ${exitFilePath(exitDir, id)} holds "${text.trim()}", not an exit code`);
  return code;
}

/** `woken` resolves when an exit file for `id` may have appeared, or after `withinMs` at the latest. */
export interface ExitFileWait {
  woken: Promise<void>;
  cancel(): void;
}
export type ExitFileSignal = (id: string, withinMs: number) => ExitFileWait;

/**
 * Waits for the exit file; resolves undefined if it has not appeared within timeoutMs. The file is
 * looked for every `pollMs`, and at once whenever `appeared` (the exit watcher) says it may be there.
 */
export async function waitForExitCode(exitDir: string, id: string, timeoutMs: number, appeared?: ExitFileSignal, pollMs = 50): Promise<number | undefined> {
  if (!appeared) return pollUntil(() => readExitCode(exitDir, id), timeoutMs, pollMs);
  const deadline = performance.now() + timeoutMs;
  for (;;) {
    // Listening before the read: a file that appears in between still wakes the wait.
    const wait = appeared(id, Math.min(pollMs, Math.max(1, deadline - performance.now())));
    const code = await readExitCode(exitDir, id).catch((err: unknown) => {
      wait.cancel();
      throw err;
    });
    if (code !== undefined || performance.now() >= deadline) {
      wait.cancel();
      return code;
    }
    await wait.woken;
  }
}

export async function removeExitFile(exitDir: string, id: string): Promise<void> {
  await fs.rm(exitFilePath(exitDir, id), { force: true });
}

/**
 * Whether the kernel OOM-killed something in the container: conmon creates `<persistDir>/oom`
 * when the container's memory cgroup reports an OOM kill.
 */
export async function wasOomKilled(persistDir: string): Promise<boolean> {
  try {
    await fs.access(join(persistDir, 'oom'));
    return true;
  } catch {
    return false;
  }
}
