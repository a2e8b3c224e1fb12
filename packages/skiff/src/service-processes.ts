import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { isProcessAlive, pollUntil, readPidFile, type Logger } from '@skiff/common/core';
import type { ServiceSpec } from './services.js';

const STOP_GRACE_MS = 10_000;

export function servicePidFile(runDir: string, name: string): string {
  return join(runDir, `${name}.pid`);
}

export function commandLineOf(pid: number): string {
  try {
    return readFileSync(`/proc/${pid}/cmdline`, 'utf8').replaceAll('\0', ' ');
  } catch {
    return '';
  }
}

async function waitForExit(pid: number, timeoutMs: number): Promise<boolean> {
  return (await pollUntil(async () => (isProcessAlive(pid) ? undefined : true), timeoutMs, 50)) === true;
}

/** A service left running by a supervisor that was killed is ended, but only if it is really ours. */
export async function endLeftoverService(spec: ServiceSpec, runDir: string, log: Logger): Promise<void> {
  const pid = await readPidFile(servicePidFile(runDir, spec.name));
  if (pid === undefined || !isProcessAlive(pid) || !commandLineOf(pid).includes(spec.entry)) return;
  log.warn({ service: spec.name, pid }, 'stopping a service left running by an earlier supervisor');
  process.kill(pid, 'SIGTERM');
  if (!(await waitForExit(pid, STOP_GRACE_MS))) process.kill(pid, 'SIGKILL');
  await waitForExit(pid, 2000);
}
