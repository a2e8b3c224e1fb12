/**
 * A RuntimeContext for the calls' unit tests: the real state index, record store, locks, event
 * bus, handlers and network settings, with every directory and socket under a temporary directory
 * of its own (nothing listens on the sockets, no CNI network is configured, no CDI spec exists).
 * It runs no tool and needs no root; what a decision under test would hand to runc, conmon or CNI
 * is out of its reach by design, so a test reaching it fails on the missing directory or socket.
 */
import { promises as fs } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import assert from 'node:assert/strict';
import type { status } from '@grpc/grpc-js';
import { createLogger, defaultConfig, StatusError, type RuntimeServiceConfig, type SkiffConfig } from '@skiff/common';
import { ImageStore } from '@skiff/image-store';
import { runtimeServiceDefinition, type RuntimeServiceDefinition } from '@skiff/proto';
import { CdiRegistry } from '../cdi/cdi-registry.js';
import { CniRunner } from '../cni/cni.js';
import { NetnsManager } from '../cni/netns.js';
import { ContainerEvents } from '../events/container-events.js';
import { ExitWatchState } from '../events/exit-watch-state.js';
import { readHostFacts } from '../oci/host-facts.js';
import { KeyedMutex } from '../state/keyed-mutex.js';
import { PendingCleanups } from '../state/pending-cleanups.js';
import { containerRecordFixture, sandboxRecordFixture } from '../state/record-fixtures.js';
import { RecordStore } from '../state/record-store.js';
import type { ContainerPhase, ContainerRecord, SandboxPhase, SandboxRecord } from '../state/records.js';
import { StateIndex } from '../state/state-index.js';
import type { RuntimeContext } from './context.js';
import { NetworkSettings } from './network-settings.js';
import { RuntimePaths } from './paths.js';
import { RuntimeHandlers } from './runtime-handlers.js';

export interface UnitContext {
  ctx: RuntimeContext;
  /** The temporary directory everything lives under. */
  dir: string;
  /** A sandbox record in the index (and on disk); a ready one's pause is this process, so it counts as running. */
  addSandbox(phase?: SandboxPhase, extra?: Partial<SandboxRecord>): Promise<SandboxRecord>;
  /** A container record of `sandbox` in the index (and on disk); a created or running one's process is this one. */
  addContainer(sandbox: SandboxRecord, phase: ContainerPhase, extra?: Partial<ContainerRecord>): Promise<ContainerRecord>;
  cleanup(): Promise<void>;
}

let counter = 0;

function uniqueId(kind: string): string {
  counter++;
  return `${kind}${process.pid.toString(16).padStart(8, '0')}${counter.toString(16).padStart(8, '0')}`.padEnd(64, '0');
}

export async function unitContext(options: { runtime?: Partial<RuntimeServiceConfig>; journald?: boolean } = {}): Promise<UnitContext> {
  const dir = await fs.mkdtemp(join(tmpdir(), 'skiff-call-'));
  const base = defaultConfig();
  const config: SkiffConfig = {
    ...base,
    root: join(dir, 'root'),
    run_dir: join(dir, 'run'),
    runtime: { ...base.runtime, cni_conf_dir: join(dir, 'cni'), cdi_spec_dirs: [join(dir, 'cdi')], socket: join(dir, 'run', 'runtime.sock'), ...options.runtime },
    stream: { ...base.stream, internal_socket: join(dir, 'run', 'stream-internal.sock') },
    logs: { ...base.logs, internal_socket: join(dir, 'run', 'logs-internal.sock'), state_dir: join(dir, 'logs') },
  };
  const paths = new RuntimePaths(config.root, config.run_dir);
  for (const d of [paths.exitDir, join(dir, 'cni'), join(dir, 'images')]) await fs.mkdir(d, { recursive: true });
  const log = createLogger('runtime-svc', 'fatal');
  const records = new RecordStore(paths);
  await records.init();
  const state = new StateIndex();
  const images = await ImageStore.open(join(dir, 'images'), { writer: false, logger: log });
  const ctx: RuntimeContext = {
    config,
    log,
    paths,
    facts: await readHostFacts(),
    cgroupDriver: 'cgroupfs',
    handlers: new RuntimeHandlers(config.runtime, paths, false),
    netns: new NetnsManager(paths.netnsDir),
    cni: new CniRunner({ binDirs: config.runtime.cni_bin_dirs, cacheDir: paths.cniCacheDir }),
    images,
    cdi: new CdiRegistry(config.runtime.cdi_spec_dirs, log),
    records,
    state,
    exitWatch: new ExitWatchState(),
    events: new ContainerEvents(state, config.runtime.event_backlog),
    locks: new KeyedMutex(),
    cleanups: new PendingCleanups(log),
    network: await NetworkSettings.load(paths.runtimeConfigFile),
    journald: options.journald ?? true,
    runtimeVersion: '0.1.0',
    runtimeVersions: [],
  };
  return {
    ctx,
    dir,
    async addSandbox(phase = 'ready', extra = {}) {
      const rec = sandboxRecordFixture(uniqueId('5a'), phase, { pid: phase === 'ready' ? process.pid : undefined, ...extra });
      await fs.mkdir(paths.sandbox(rec.id).dir, { recursive: true });
      await records.saveSandbox(rec);
      state.sandboxes.set(rec.id, rec);
      return rec;
    },
    async addContainer(sandbox, phase, extra = {}) {
      const rec = containerRecordFixture(uniqueId('c0'), sandbox.id, phase, { pid: phase === 'created' || phase === 'running' ? process.pid : undefined, ...extra });
      await fs.mkdir(paths.container(rec.id).dir, { recursive: true });
      await records.saveContainer(rec);
      state.containers.set(rec.id, rec);
      return rec;
    },
    async cleanup() {
      await fs.rm(dir, { recursive: true, force: true });
    },
  };
}

type UnitContextOptions = Parameters<typeof unitContext>[0];

/** Runs `test` in a fresh unit context (with `options`, when given), removed afterwards whatever the outcome. */
export async function inUnitContext(test: (u: UnitContext) => Promise<void>): Promise<void>;
export async function inUnitContext(options: UnitContextOptions, test: (u: UnitContext) => Promise<void>): Promise<void>;
export async function inUnitContext(first: UnitContextOptions | ((u: UnitContext) => Promise<void>), second?: (u: UnitContext) => Promise<void>): Promise<void> {
  const [options, test] = typeof first === 'function' ? [{}, first] : [first, second!];
  const u = await unitContext(options);
  try {
    await test(u);
  } finally {
    await u.cleanup();
  }
}

/** `promise` rejects with a StatusError of `code` whose message matches `message`. */
export async function rejectsWithStatus(promise: Promise<unknown>, code: status, message: RegExp): Promise<void> {
  await assert.rejects(promise, (err: unknown) => {
    assert.ok(err instanceof StatusError, `a StatusError, not ${String(err)}`);
    assert.equal(err.code, code, `status ${code} expected, got ${err.code}: ${err.message}`);
    assert.match(err.message, message);
    return true;
  });
}

/** A request as the server receives it: `fields` encoded and decoded again, so every field has its protobuf default. */
export function criRequest<Decoded>(method: keyof RuntimeServiceDefinition, fields: object): Decoded {
  const definition = runtimeServiceDefinition[method] as unknown as { requestSerialize: (r: object) => Buffer; requestDeserialize: (b: Buffer) => Decoded };
  return definition.requestDeserialize(definition.requestSerialize(fields));
}
