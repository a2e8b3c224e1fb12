import { parseArgs } from 'node:util';
import { Server } from '@grpc/grpc-js';
import { startDaemonMetrics } from '@skiff/common/metrics';
import { PullMetrics } from './pull-metrics.js';
import { collectGarbageWhenQuiet, createLogger, listenOnUnixSocket, loadConfig, notifyReady, parseDuration, reloadConfigOnSighup, requireHostTools, setCallObserver, stopOnSignals, keepAllocatorToThisProcess } from '@skiff/common';
import { CHANNEL_OPTIONS, imageServiceDefinition } from '@skiff/proto';
import { ImageStore, UNPACK_TOOLS } from '@skiff/image-store';
import { RegistryClient, loadRegistriesConfig } from '@skiff/registry';
import { join } from 'node:path';
import { Puller, parsePinnedImages } from './puller.js';
import { imageService } from './server.js';

async function main(): Promise<void> {
  keepAllocatorToThisProcess();
  const { values } = parseArgs({ options: { config: { type: 'string' } } });
  const config = await loadConfig(values.config);
  const log = createLogger('image-svc', config.log_level);

  await requireHostTools(UNPACK_TOOLS);
  const { max_layer_bytes, max_layer_entries, max_pax_header_bytes, min_free_bytes } = config.image;
  const store = await ImageStore.open(join(config.root, 'images'), {
    logger: log,
    writer: true,
    limits: { maxLayerBytes: max_layer_bytes, maxLayerEntries: max_layer_entries, maxPaxHeaderBytes: max_pax_header_bytes, minFreeBytes: min_free_bytes },
  });
  const registries = await loadRegistriesConfig(config.image.registries_config);
  const registry = new RegistryClient({ registries, logger: log, timeouts: { idleMs: parseDuration(config.image.pull_progress_timeout)! } });
  const puller = new Puller(store, registry, log, config.image.max_concurrent_downloads, parsePinnedImages(config.image.pinned_images));

  const metrics = await startDaemonMetrics('image-svc', config.image.metrics_address, config.run_dir, log);
  collectGarbageWhenQuiet(log);
  setCallObserver((method, code, seconds) => metrics.observeCall(method, code, seconds));
  const server = new Server(CHANNEL_OPTIONS);
  server.addService(imageServiceDefinition, imageService(store, puller, log, new PullMetrics(metrics)));
  const listening = await listenOnUnixSocket(server, config.image.socket);
  log.info({ socket: config.image.socket, store: store.root, registries: config.image.registries_config }, 'image service ready');
  notifyReady(log);

  reloadConfigOnSighup('image-svc', values.config, config, log, async (next) => {
    // Everything is read before anything is applied: a bad file changes nothing.
    const nextRegistries = await loadRegistriesConfig(next.image.registries_config);
    const pinned = parsePinnedImages(next.image.pinned_images);
    registry.reconfigure(nextRegistries, parseDuration(next.image.pull_progress_timeout)!);
    puller.setPinnedImages(pinned);
    log.level = next.log_level;
    return ['log_level', 'image.registries_config', 'image.pinned_images', 'image.pull_progress_timeout'];
  });

  stopOnSignals(log, async () => {
    await listening.close();
    await store.close();
  });
}

main().catch((err: unknown) => {
  process.stderr.write(`image-svc: ${err instanceof Error ? err.message : String(err)}\n`);
  process.exit(1);
});
