import { status } from '@grpc/grpc-js';
import { StatusError } from '@skiff/common';
import { isAbsolute, join, relative, resolve } from 'node:path';

/**
 * The container's CRI log file: the sandbox's log directory joined with the container's relative
 * log path. It has to stay inside the directory: "../" may not climb out. Without a log directory
 * or a log path there is no log file ("").
 */
export function resolveLogPath(logDirectory: string, logPath: string): string {
  if (!logPath || !logDirectory) return '';
  if (!isAbsolute(logDirectory)) {
    throw new StatusError(status.INVALID_ARGUMENT, `the sandbox's log directory "${logDirectory}" must be an absolute path`);
  }
  const dir = resolve(logDirectory);
  const full = resolve(join(dir, logPath));
  const rel = relative(dir, full);
  if (rel === '' || rel === '..' || rel.startsWith('../') || isAbsolute(rel)) {
    throw new StatusError(status.INVALID_ARGUMENT, `log path "${logPath}" leaves the sandbox's log directory ${dir}; it must name a file inside it`);
  }
  if (full.includes(':')) {
    throw new StatusError(status.INVALID_ARGUMENT, `log path ${full} contains ':', which the container monitor cannot handle`);
  }
  return full;
}

/**
 * A container with a log file needs journald. Without it conmon would write the file itself, and
 * conmon (2.1.6) opens the path, and `<path>.tmp` when the log is reopened, following symbolic
 * links: whoever can write the log directory could point them at any file of root's. conmon takes
 * no descriptor for its log, so such a container is refused rather than given to it.
 */
export function requireJournaldForLog(journald: boolean, logPath: string, what: string): void {
  if (journald || !logPath) return;
  throw new StatusError(
    status.FAILED_PRECONDITION,
    `${what}: journald is not running, and without it the container's log ${logPath} would be written by conmon, which follows symbolic links in the log directory; start systemd-journald, then restart runtime-svc (or create the container without a log path)`,
  );
}
