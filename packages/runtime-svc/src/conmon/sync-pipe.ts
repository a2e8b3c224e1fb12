import { CONMON_PIPE_ENV } from '@skiff/common';

/**
 * conmon talks to its parent over a pipe whose descriptor it finds in _OCI_SYNCPIPE: one JSON
 * object per line, the container pid after `runtime create`, or the exit code after an `--exec`,
 * with "message" holding runtime stderr on failure. (It would also wait for a byte on
 * _OCI_STARTPIPE, when given one; Skiff gives none.) conmon is run like any command, through
 * runReportingCommand, which hands it the pipe and reads the first line.
 */
export const SYNC_PIPE_ENV = CONMON_PIPE_ENV.sync;

export interface SyncMessage {
  /** "pid" for create, "exit_code" for exec (conmon API version 0), "data" for API version 1. */
  value: number;
  message?: string;
}

export function parseSyncMessage(line: string): SyncMessage {
  let parsed: Record<string, unknown>;
  try {
    parsed = JSON.parse(line) as Record<string, unknown>;
  } catch {
    throw new Error(`conmon wrote an unreadable sync message: ${line.slice(0, 200)}`);
  }
  const raw = parsed['data'] ?? parsed['pid'] ?? parsed['exit_code'];
  if (typeof raw !== 'number') throw new Error(`conmon sync message has no pid or exit code: ${line.slice(0, 200)}`);
  const out: SyncMessage = { value: raw };
  if (typeof parsed['message'] === 'string') out.message = parsed['message'];
  return out;
}
