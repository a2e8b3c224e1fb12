import { spawn } from 'node:child_process';
import { mkdirSync, openSync, promises as fs } from 'node:fs';
import { dirname } from 'node:path';
import { createLogger, removePidFile, writePidFile, type SkiffConfig } from '@skiff/common/core';
import { SERVICES } from '../services.js';
import { SUPERVISOR_NODE_OPTIONS } from '../node-options.js';
import { installDefaultNetwork } from '../default-network.js';
import { Supervisor } from '../supervisor.js';
import { supervisorPidFile } from '../paths.js';
import { Counter, startDaemonMetrics } from '@skiff/common/metrics';
import { collectStatus, formatStatus, runningSupervisorPid } from './status.js';

const DETACH_READY_TIMEOUT_MS = 60_000;

async function prepareDirectories(config: SkiffConfig): Promise<void> {
  await fs.mkdir(config.run_dir, { recursive: true, mode: 0o700 });
  await fs.mkdir(config.root, { recursive: true, mode: 0o700 });
}

/** Runs the supervisor in this process until SIGTERM or SIGINT. */
export async function upForeground(config: SkiffConfig, configPath: string | undefined): Promise<number> {
  const existing = await runningSupervisorPid(config);
  if (existing !== undefined) {
    process.stderr.write(`skiff is already running (supervisor pid ${existing}); use "skiff status" or "skiff down"\n`);
    return 1;
  }
  await prepareDirectories(config);
  const log = createLogger('skiff', config.log_level);
  const pidFile = supervisorPidFile(config);
  await writePidFile(pidFile);
  await installDefaultNetwork(config, log);
  const metrics = await startDaemonMetrics('skiff', config.metrics_address, config.run_dir, log);
  const restarts = new Counter({
    name: 'skiff_service_restarts_total',
    help: 'Times the supervisor restarted a service that died.',
    labelNames: ['service'],
    registers: [metrics.registry],
  });
  for (const spec of SERVICES) restarts.inc({ service: spec.name }, 0);
  const supervisor = new Supervisor(SERVICES, configPath, config.run_dir, process.stdout, log, (service) => restarts.inc({ service }));
  await supervisor.start();
  log.info({ services: supervisor.pids() }, 'skiff is up');
  await new Promise<void>((resolve) => {
    const onSignal = (signal: NodeJS.Signals): void => {
      log.info({ signal }, 'stopping services');
      resolve();
    };
    process.once('SIGTERM', onSignal);
    process.once('SIGINT', onSignal);
  });
  await supervisor.stop();
  await removePidFile(pidFile);
  log.info('skiff is down');
  return 0;
}

/** Starts the supervisor in the background with its output in the log file, and waits until every service answers. */
export async function upDetached(config: SkiffConfig, configPath: string | undefined, entry: string): Promise<number> {
  const existing = await runningSupervisorPid(config);
  if (existing !== undefined) {
    process.stdout.write(`skiff is already running (supervisor pid ${existing})\n`);
    return 0;
  }
  mkdirSync(dirname(config.log_file), { recursive: true, mode: 0o755 });
  const out = openSync(config.log_file, 'a', 0o640);
  const args = [...SUPERVISOR_NODE_OPTIONS, entry, 'up', ...(configPath === undefined ? [] : ['--config', configPath])];
  const child = spawn(process.execPath, args, { detached: true, stdio: ['ignore', out, out] });
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
