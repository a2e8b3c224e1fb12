import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { SkiffConfig } from '@skiff/common/core';

export function supervisorPidFile(config: SkiffConfig): string {
  return join(config.run_dir, 'skiff.pid');
}

/** The FIFO the supervisor holds open as its services' stdin: they stop when it is gone. */
export function supervisorFifo(config: SkiffConfig): string {
  return join(config.run_dir, 'supervisor.stdin');
}

/** The `skiff` command: `up` in the foreground runs the supervisor script, anything else dist/main.js. */
export const SKIFF_COMMAND = fileURLToPath(new URL('../bin/skiff', import.meta.url));

/** The supervisor `skiff up` runs: a bash script, far smaller than a node process. */
export const SUPERVISOR_SCRIPT = fileURLToPath(new URL('../bin/skiff-supervisor', import.meta.url));
