import { parseArgs } from 'node:util';
import { join } from 'node:path';
import { Server } from '@grpc/grpc-js';
import { collectGarbageWhenQuiet, createLogger, listenOnUnixSocket, loadConfig, parseDuration, requireHostTools, notifyReady, reloadConfigOnSighup, runCommandsThroughSpawnServer, setCallObserver, stopOnSignals, keepAllocatorToThisProcess } from '@skiff/common';
import { ImageStore } from '@skiff/image-store';
import { CHANNEL_OPTIONS, runtimeServiceDefinition } from '@skiff/proto';
import { startDaemonMetrics } from '@skiff/common/metrics';
import { CdiRegistry } from './cdi/cdi-registry.js';
import { openRuntime } from './daemon/open-runtime.js';
import { finishInterruptedStarts } from './recovery/finish-starts.js';
import { RuntimeHandlers } from './daemon/runtime-handlers.js';
import { inspectRuntimeVersions, warnOfRuntimeVersions } from './daemon/runtime-versions.js';
import { registerRuntimeMetrics } from './metrics/runtime-metrics.js';
import { runtimeService } from './server.js';
import { nriContainerControl } from './container/nri-container-control.js';
import { NriRuntime } from './nri/nri-runtime.js';

async function main(): Promise<void> {
  keepAllocatorToThisProcess();
  const { values } = parseArgs({ options: { config: { type: 'string' } } });
  const config = await loadConfig(values.config);
  const log = createLogger('runtime-svc', config.log_level);
  // Every call runs commands (runc, CNI plugins, mount): started from a small helper, they do not
  // fork this daemon nor hold its event loop, so calls made at once do not queue behind each other.
  if (!runCommandsThroughSpawnServer((message) => log.warn(message))) log.warn('/usr/bin/python3 is missing: commands are started by the daemon itself');
  // runc, conmon and catatonit are checked where the runtime opens; these run from PATH.
  await requireHostTools([
    { name: 'mount', path: 'mount', debianPackage: 'mount' },
    { name: 'umount', path: 'umount', debianPackage: 'mount' },
    { name: 'unshare', path: 'unshare', debianPackage: 'util-linux' },
    { name: 'nsenter', path: 'nsenter', debianPackage: 'util-linux' },
    { name: 'tee', path: 'tee', debianPackage: 'coreutils' },
    { name: 'ip', path: 'ip', debianPackage: 'iproute2' },
  ]);

  const images = await ImageStore.open(join(config.root, 'images'), { logger: log, writer: false });
  const { ctx, recovery } = await openRuntime({ config, log, images });
  log.info(recovery, 'runtime state recovered');
  await finishInterruptedStarts(ctx, recovery.startsToFinish);
  const metrics = await startDaemonMetrics('runtime-svc', config.runtime.metrics_address, config.run_dir, log);
  collectGarbageWhenQuiet(log);
  setCallObserver((method, code, seconds) => metrics.observeCall(method, code, seconds));
  registerRuntimeMetrics(metrics, ctx);

  if (config.nri.enable) {
    const nri = new NriRuntime({
      socket: config.nri.socket,
      pluginDir: config.nri.plugin_dir,
      pluginConfigDir: config.nri.plugin_config_dir,
      registrationTimeoutMs: parseDuration(config.nri.registration_timeout) ?? 5000,
      requestTimeoutMs: parseDuration(config.nri.request_timeout) ?? 2000,
      runtimeVersion: ctx.runtimeVersion,
      log,
      snapshot: () => ({
        pods: [...ctx.state.sandboxes.values()].filter((p) => p.phase === 'ready' || p.phase === 'stopped'),
        containers: [...ctx.state.containers.values()].filter((c) => c.phase === 'created' || c.phase === 'running' || c.phase === 'exited'),
      }),
      containers: nriContainerControl(ctx),
    });
    await nri.listen();
    ctx.nri = nri;
    await nri.launchPreinstalled();
  }

  const server = new Server(CHANNEL_OPTIONS);
  server.addService(runtimeServiceDefinition, runtimeService(ctx));
  const listening = await listenOnUnixSocket(server, config.runtime.socket);
  log.info({ socket: config.runtime.socket, root: config.root, cgroupDriver: ctx.cgroupDriver, journald: ctx.journald }, 'runtime service ready');
  notifyReady(log);

  reloadConfigOnSighup('runtime-svc', values.config, config, log, async (next) => {
    const handlers = new RuntimeHandlers(next.runtime, ctx.paths, ctx.cgroupDriver === 'systemd');
    // Containers of a handler that is gone are still stopped and removed through it (forExisting).
    ctx.handlers = handlers;
    ctx.runtimeVersions = await inspectRuntimeVersions(handlers);
    warnOfRuntimeVersions(ctx.runtimeVersions, log);
    ctx.cdi = new CdiRegistry(next.runtime.cdi_spec_dirs, log);
    // Pods made before keep the handler recorded for them.
    ctx.config.runtime.default_handler = next.runtime.default_handler;
    // Read by each RunPodSandbox: pods made before keep or go without their pause.
    ctx.config.runtime.pause_every_pod = next.runtime.pause_every_pod;
    log.level = next.log_level;
    return ['log_level', 'runtime.handlers', 'runtime.default_handler', 'runtime.pause_every_pod', 'runtime.cdi_spec_dirs'];
  });

  // Containers are conmon's children, not ours: they keep running while the service is down.
  stopOnSignals(log, async () => {
    await listening.close();
    await ctx.nri?.close();
    // Removals already answered finish their cleanup now rather than at the next start.
    await ctx.cleanups.idle();
    await images.close();
  });
}

main().catch((err: unknown) => {
  process.stderr.write(`runtime-svc: ${err instanceof Error ? err.message : String(err)}\n`);
  process.exit(1);
});
