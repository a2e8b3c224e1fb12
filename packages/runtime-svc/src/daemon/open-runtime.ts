import { watchContainerExits } from '../events/exit-watcher.js';
import { watchPauseProcesses } from '../events/pause-watcher.js';
import { PendingCleanups } from '../state/pending-cleanups.js';
import { ExitWatchState } from '../events/exit-watch-state.js';
import { ContainerEvents } from '../events/container-events.js';
import { CdiRegistry } from '../cdi/cdi-registry.js';
import { promises as fs, readFileSync } from 'node:fs';
import { ensureJournald, type Logger, type SkiffConfig, errorMessage } from '@skiff/common';
import { CniRunner } from '../cni/cni.js';
import { NetnsManager } from '../cni/netns.js';
import { readHostFacts } from '../oci/host-facts.js';
import { settlePreviousInstance } from '../recovery/previous-instance.js';
import { recoverState, type RecoveryReport } from '../recovery/recover.js';
import { KeyedMutex } from '../state/keyed-mutex.js';
import { RecordStore } from '../state/record-store.js';
import { StateIndex } from '../state/state-index.js';
import { detectCgroupDriver } from '../cgroups/cgroups.js';
import type { ImageReader, RuntimeContext } from './context.js';
import { NetworkSettings } from './network-settings.js';
import { RuntimePaths } from './paths.js';
import { RuntimeHandlers } from './runtime-handlers.js';
import { inspectRuntimeVersions, warnOfRuntimeVersions } from './runtime-versions.js';

/** The version in this package's package.json, reported by Version. */
export function packageVersion(): string {
  const text = readFileSync(new URL('../../package.json', import.meta.url), 'utf8');
  return (JSON.parse(text) as { version: string }).version;
}

export interface OpenRuntimeOptions {
  config: SkiffConfig;
  log: Logger;
  images: ImageReader;
}

/**
 * Builds the runtime's shared context and recovers its state: what the records say, checked
 * against runc, conmon's exit files and the machine, with anything half-made removed.
 */
export async function openRuntime(o: OpenRuntimeOptions): Promise<{ ctx: RuntimeContext; recovery: RecoveryReport }> {
  const runtime = o.config.runtime;
  const paths = new RuntimePaths(o.config.root, o.config.run_dir);
  for (const dir of [paths.stateDir, paths.exitDir, paths.attachDir, paths.execDir]) await fs.mkdir(dir, { recursive: true, mode: 0o700 });
  await fs.rm(paths.execDir, { recursive: true, force: true });
  await fs.mkdir(paths.execDir, { recursive: true, mode: 0o700 });
  await settlePreviousInstance(paths.instanceFile, o.log);
  for (const binary of [runtime.runc, runtime.conmon, runtime.catatonit]) {
    await fs.access(binary).catch(() => {
      const how = binary === runtime.runc ? ' (scripts/runc.sh installs a runc at /usr/local/sbin/runc)' : '';
      throw new Error(`${binary} is missing; install it${how} or point the runtime configuration at it`);
    });
  }
  const cgroupDriver = await detectCgroupDriver();
  let journald = false;
  try {
    await ensureJournald();
    journald = true;
  } catch (err) {
    o.log.warn({ err: errorMessage(err) }, 'journald is not available: container output goes to the CRI log files only');
  }
  const handlers = new RuntimeHandlers(runtime, paths, cgroupDriver === 'systemd');
  const runtimeVersions = await inspectRuntimeVersions(handlers);
  warnOfRuntimeVersions(runtimeVersions, o.log);
  const records = new RecordStore(paths);
  await records.init();
  const state = new StateIndex();
  const ctx: RuntimeContext = {
    config: o.config,
    log: o.log,
    paths,
    facts: await readHostFacts(),
    cgroupDriver,
    handlers,
    netns: new NetnsManager(paths.netnsDir),
    cni: new CniRunner({ binDirs: runtime.cni_bin_dirs, cacheDir: paths.cniCacheDir }),
    images: o.images,
    cdi: new CdiRegistry(runtime.cdi_spec_dirs, o.log),
    records,
    state,
    events: new ContainerEvents(state, runtime.event_backlog),
    locks: new KeyedMutex(),
    cleanups: new PendingCleanups(o.log),
    exitWatch: new ExitWatchState(),
    network: await NetworkSettings.load(paths.runtimeConfigFile),
    journald,
    runtimeVersion: packageVersion(),
    runtimeVersions,
  };
  const recovery = await recoverState(ctx);
  watchContainerExits(ctx);
  watchPauseProcesses(ctx);
  return { ctx, recovery };
}
