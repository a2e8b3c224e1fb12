import { promises as fs } from 'node:fs';
import { parseArgs } from 'node:util';
import { collectGarbageWhenQuiet, createLogger, loadConfig, notifyReady, parseDuration, reloadConfigOnSighup, requireHostTools, SpawnServer, stopOnSignals, keepAllocatorToThisProcess } from '@skiff/common/core';
import { startDaemonMetrics } from '@skiff/common/metrics';
import { LOGGER_PATH } from './barrier.js';
import { closeServer, startInternalServer } from './internal-server.js';
import { LogEngine } from './log-engine.js';
import { registerLogsMetrics } from './logs-metrics.js';
import { listContainerLogs } from './runtime-list.js';

async function main(): Promise<void> {
  keepAllocatorToThisProcess();
  const { values } = parseArgs({ options: { config: { type: 'string' } } });
  const config = await loadConfig(values.config);
  const log = createLogger('logs-svc', config.log_level);
  await requireHostTools([
    { name: 'journalctl', path: config.logs.journalctl, debianPackage: 'systemd' },
    { name: 'logger', path: LOGGER_PATH, debianPackage: 'bsdutils' },
  ]);
  const engine = await LogEngine.open({
    stateDir: config.logs.state_dir,
    journalctl: config.logs.journalctl,
    log,
    barrierTimeoutMs: parseDuration(config.logs.flush_timeout)!,
    sender: { comm: 'conmon', exe: await fs.realpath(config.runtime.conmon).catch(() => config.runtime.conmon) },
    ...(SpawnServer.available() ? { barrierHelper: new SpawnServer((message) => log.warn(message)) } : {}),
  });
  registerLogsMetrics(await startDaemonMetrics('logs-svc', config.logs.metrics_address, config.run_dir, log), engine);
  collectGarbageWhenQuiet(log);
  // Listening before runtime-svc's list is read: runtime-svc offers a container made while logs-svc
  // was down again once it lists it, and this order leaves no container between the two.
  const internal = await startInternalServer({ socket: config.logs.internal_socket, engine, log });
  reloadConfigOnSighup('logs-svc', values.config, config, log, async (next) => {
    log.level = next.log_level;
    return ['log_level'];
  });
  stopOnSignals(log, async () => {
    await closeServer(internal);
    await fs.rm(config.logs.internal_socket, { force: true });
    await engine.stop();
  });
  // runtime-svc owns the list of containers: until it answers, nothing is read past the cursor.
  const current = await listContainerLogs(config.runtime.socket, log);
  await engine.start(current);
  log.info({ internalSocket: config.logs.internal_socket, stateDir: config.logs.state_dir }, 'logs service ready');
  notifyReady(log);
}

main().catch((err: unknown) => {
  process.stderr.write(`logs-svc: ${err instanceof Error ? err.message : String(err)}\n`);
  process.exit(1);
});
