import { spawn } from 'node:child_process';
import { mkdirSync, openSync, promises as fs } from 'node:fs';
import { dirname } from 'node:path';
import { createLogger, writePidFile, type LogLevel, type SkiffConfig } from '@skiff/common/core';
import { SERVICES } from '../services.js';
import { installDefaultNetwork } from '../default-network.js';
import { endLeftoverService, servicePidFile } from '../service-processes.js';
import { SUPERVISOR_SCRIPT, supervisorFifo, supervisorPidFile } from '../paths.js';
import { collectStatus, formatStatus, runningSupervisorPid } from './status.js';

const DETACH_READY_TIMEOUT_MS = 60_000;

/** pino's level numbers, for the supervisor script's own lines. */
const LEVEL_NUMBER: Record<LogLevel, number> = { trace: 10, debug: 20, info: 30, warn: 40, error: 50, fatal: 60 };

async function prepareDirectories(config: SkiffConfig): Promise<void> {
  await fs.mkdir(config.run_dir, { recursive: true, mode: 0o700 });
  await fs.mkdir(config.root, { recursive: true, mode: 0o700 });
}

/** The supervisor reads its plan as tab-separated fields, one record a line. */
function planLine(fields: readonly string[]): string {
  const bad = fields.find((f) => /[\t\n]/.test(f));
  if (bad !== undefined) throw new Error(`"${bad}" holds a tab or a newline, which skiff up cannot pass on; use another path`);
  return `${fields.join('\t')}\n`;
}

/**
 * `skiff up --plan`, run by bin/skiff-supervisor (its pid in SKIFF_SUPERVISOR_PID): the one-off
 * work of `skiff up`, then the plan the script supervises by — the services' command lines.
 */
export async function planUp(config: SkiffConfig, configPath: string | undefined): Promise<number> {
  const supervisorPid = Number(process.env['SKIFF_SUPERVISOR_PID']);
  if (!Number.isInteger(supervisorPid) || supervisorPid <= 0) {
    process.stderr.write('skiff up --plan is run by bin/skiff-supervisor, which passes SKIFF_SUPERVISOR_PID\n');
    return 2;
  }
  const existing = await runningSupervisorPid(config);
  if (existing !== undefined && existing !== supervisorPid) {
    process.stderr.write(`skiff is already running (supervisor pid ${existing}); use "skiff status" or "skiff down"\n`);
    return 1;
  }
  await prepareDirectories(config);
  const log = createLogger('skiff', config.log_level);
  const pidFile = supervisorPidFile(config);
  await writePidFile(pidFile, supervisorPid);
  await installDefaultNetwork(config, log);
  let plan = planLine(['level', String(LEVEL_NUMBER[config.log_level])]) + planLine(['pidfile', pidFile]) + planLine(['fifo', supervisorFifo(config)]);
  for (const spec of SERVICES) {
    await endLeftoverService(spec, config.run_dir, log);
    const command = [process.execPath, ...(spec.nodeOptions ?? []), spec.entry, ...(configPath === undefined ? [] : ['--config', configPath])];
    for (const [name, value] of Object.entries(spec.environment ?? {})) plan += planLine(['env', spec.name, `${name}=${value}`]);
    plan += planLine(['service', spec.name, servicePidFile(config.run_dir, spec.name), ...command]);
  }
  process.stdout.write(plan);
  return 0;
}

function supervisorArgs(configPath: string | undefined): string[] {
  return ['up', ...(configPath === undefined ? [] : ['--config', configPath])];
}

/**
 * `node dist/main.js up` run directly rather than through bin/skiff: runs the supervisor script and
 * waits for it, passing on SIGTERM and SIGINT (this node process is then there for nothing but that).
 */
export async function upForeground(configPath: string | undefined): Promise<number> {
  const child = spawn(SUPERVISOR_SCRIPT, supervisorArgs(configPath), { stdio: 'inherit', env: { ...process.env, SKIFF_NODE: process.execPath } });
  for (const signal of ['SIGTERM', 'SIGINT'] as const) process.on(signal, () => child.kill(signal));
  return new Promise((resolve, reject) => {
    child.once('error', reject);
    child.once('exit', (code, signal) => resolve(code ?? (signal === null ? 1 : 128)));
  });
}

/** Starts the supervisor in the background with its output in the log file, and waits until every service answers. */
export async function upDetached(config: SkiffConfig, configPath: string | undefined): Promise<number> {
  const existing = await runningSupervisorPid(config);
  if (existing !== undefined) {
    process.stdout.write(`skiff is already running (supervisor pid ${existing})\n`);
    return 0;
  }
  mkdirSync(dirname(config.log_file), { recursive: true, mode: 0o755 });
  const out = openSync(config.log_file, 'a', 0o640);
  const child = spawn(SUPERVISOR_SCRIPT, supervisorArgs(configPath), {
    detached: true,
    stdio: ['ignore', out, out],
    env: { ...process.env, SKIFF_NODE: process.execPath },
  });
  child.unref();
  const deadline = performance.now() + DETACH_READY_TIMEOUT_MS;
  for (;;) {
    const rows = await collectStatus(config, 1000);
    if (rows.every((r) => r.answers)) {
      process.stdout.write(`${formatStatus(child.pid, rows)}\nlogs: ${config.log_file}\n`);
      return 0;
    }
    if (child.exitCode !== null || performance.now() > deadline) {
      process.stderr.write(`${formatStatus(child.pid, rows)}\nskiff did not come up; see ${config.log_file}\n`);
      return 1;
    }
    await new Promise((r) => setTimeout(r, 250));
  }
}
