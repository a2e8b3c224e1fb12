import type { ContainerEvents } from '../events/container-events.js';
import type { ExitWatchState } from '../events/exit-watch-state.js';
import type { CdiRegistry } from '../cdi/cdi-registry.js';
import type { Logger, SkiffConfig } from '@skiff/common';
import type { ImageStore } from '@skiff/image-store';
import type { CniRunner } from '../cni/cni.js';
import type { NetnsManager } from '../cni/netns.js';
import type { HostFacts } from '../oci/host-facts.js';
import type { KeyedMutex } from '../state/keyed-mutex.js';
import type { PendingCleanups } from '../state/pending-cleanups.js';
import type { RecordStore } from '../state/record-store.js';
import type { StateIndex } from '../state/state-index.js';
import type { CgroupDriver } from '../cgroups/cgroups.js';
import type { NetworkSettings } from './network-settings.js';
import type { RuntimePaths } from './paths.js';
import type { RuntimeHandlers } from './runtime-handlers.js';
import type { HandlerRuntimeVersion } from './runtime-versions.js';
import type { NriRuntime } from '../nri/nri-runtime.js';

/** The parts of the image store the runtime reads. */
export type ImageReader = Pick<ImageStore, 'find' | 'resolveRootfs' | 'acquireLease' | 'acquireLeaseNow' | 'releaseLease' | 'listLeases'>;

/** Everything the CRI operations share; built once by the daemon at start. */
export interface RuntimeContext {
  config: SkiffConfig;
  log: Logger;
  paths: RuntimePaths;
  facts: HostFacts;
  cgroupDriver: CgroupDriver;
  handlers: RuntimeHandlers;
  netns: NetnsManager;
  cni: CniRunner;
  images: ImageReader;
  /** CDI devices of the spec directories, re-read as they change. */
  cdi: CdiRegistry;
  records: RecordStore;
  state: StateIndex;
  /** Whether the exit watcher vouches for the containers' records in memory. */
  exitWatch: ExitWatchState;
  /** What GetContainerEvents streams. */
  events: ContainerEvents;
  /** Per sandbox / container id. Take a sandbox's lock before any of its containers'. */
  locks: KeyedMutex;
  /** Cleanups of removed containers and sandboxes that go on after the removal was answered. */
  cleanups: PendingCleanups;
  network: NetworkSettings;
  /** Whether journald accepts entries: container output goes there as well as to the CRI log. */
  journald: boolean;
  /** Skiff's own version. */
  runtimeVersion: string;
  /** What each handler's runtime binary says its version is (read at start and on reload). */
  runtimeVersions: HandlerRuntimeVersion[];
  /** NRI, when [nri] enables it (the daemon sets it after start-up recovery). */
  nri?: NriRuntime;
}
