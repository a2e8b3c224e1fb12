import { isProcessAlive, readPidFile, type SkiffConfig } from '@skiff/common/core';
import { SERVICES } from '../services.js';
import { servicePidFile } from '../service-processes.js';
import { supervisorPidFile } from '../paths.js';

export interface ServiceStatus {
  name: string;
  endpoint: string;
  pid?: number;
  running: boolean;
  answers: boolean;
  error?: string;
  /** What the service reports about itself (logs-svc: journald rate-limit notices, write errors). */
  details?: Record<string, unknown>;
}

export async function collectStatus(config: SkiffConfig, timeoutMs = 2000): Promise<ServiceStatus[]> {
  return Promise.all(
    SERVICES.map(async (spec) => {
      const pid = await readPidFile(servicePidFile(config.run_dir, spec.name));
      const status: ServiceStatus = {
        name: spec.name,
        endpoint: spec.endpoint(config),
        running: pid !== undefined && isProcessAlive(pid),
        answers: false,
      };
      if (pid !== undefined) status.pid = pid;
      try {
        const details = await spec.probe(config, timeoutMs);
        if (details) status.details = details;
        status.answers = true;
      } catch (err) {
        status.error = (err as Error).message;
      }
      return status;
    }),
  );
}

export function formatStatus(supervisorPid: number | undefined, rows: ServiceStatus[]): string {
  const lines = [`supervisor: ${supervisorPid !== undefined ? `running (pid ${supervisorPid})` : 'not running'}`];
  const table = [['SERVICE', 'PID', 'ENDPOINT', 'STATE']];
  for (const r of rows) {
    const state = r.answers ? 'answering' : r.running ? `not answering: ${r.error ?? ''}` : 'stopped';
    table.push([r.name, r.running && r.pid !== undefined ? String(r.pid) : '-', r.endpoint, state]);
  }
  const widths = table[0]!.map((_, i) => Math.max(...table.map((row) => row[i]!.length)));
  for (const row of table) lines.push(row.map((cell, i) => (i === row.length - 1 ? cell : cell.padEnd(widths[i]!))).join('  '));
  return lines.join('\n');
}

export async function runningSupervisorPid(config: SkiffConfig): Promise<number | undefined> {
  const pid = await readPidFile(supervisorPidFile(config));
  return pid !== undefined && isProcessAlive(pid) ? pid : undefined;
}

/** Prints the table (or JSON) and returns the exit code: 0 when every service answers. */
export async function statusCommand(config: SkiffConfig, json: boolean): Promise<number> {
  const rows = await collectStatus(config);
  const supervisorPid = await runningSupervisorPid(config);
  if (json) process.stdout.write(`${JSON.stringify({ supervisorPid: supervisorPid ?? null, services: rows }, null, 2)}\n`);
  else process.stdout.write(`${formatStatus(supervisorPid, rows)}\n`);
  return rows.every((r) => r.answers) ? 0 : 3;
}
