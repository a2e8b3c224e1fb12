import { constants as fsConstants, promises as fs } from 'node:fs';
import { join } from 'node:path';
import { parse as parseToml } from 'smol-toml';
import type { LogLevel } from './logger.js';
import { parseMetricsAddress } from './metrics/metrics-server.js';

export const DEFAULT_CONFIG_PATH = '/etc/skiff/skiff.toml';

export interface ImageServiceConfig {
  socket: string;
  /** containers-registries.conf(5) v2 file with registries, mirrors, insecure and blocked entries. */
  registries_config: string;
  /** Layers downloaded at once by the image service, across all pulls together. */
  max_concurrent_downloads: number;
  /** Images (references) reported as pinned: the kubelet never garbage-collects them. */
  pinned_images: string[];
  /** Most bytes one layer may unpack to (its uncompressed tar). */
  max_layer_bytes: number;
  /** Most tar headers (files, directories, links, PAX headers) in one layer. */
  max_layer_entries: number;
  /** Most bytes of PAX records in force for one entry of a layer (global ones accumulate). */
  max_pax_header_bytes: number;
  /** Free space kept on the image store's filesystem: a layer that would take it is refused. */
  min_free_bytes: number;
  /** A download that gets no bytes for this long ends the pull ("5m"). */
  pull_progress_timeout: string;
  /** Where this daemon serves Prometheus metrics (/metrics), host:port; "" switches them off. */
  metrics_address: string;
}

/**
 * How a handler's runtime runs a pod: "oci" makes one OCI container per CRI container, as runc and
 * crun do; "sandbox" makes the pod's sandbox one OCI container that its app containers then join,
 * as runsc (gVisor) does.
 */
export type RuntimeHandlerKind = 'oci' | 'sandbox';

/** A RuntimeClass handler: an OCI runtime with runc's command line (runc, crun, runsc, ...). */
export interface RuntimeHandlerConfig {
  /** The handler name RuntimeClass objects refer to. "" and "runc" always mean the default runtime. */
  name: string;
  runtime_path: string;
  /** Global flags given to every call of the runtime, before the command (e.g. "--platform=systrap"). */
  runtime_args: string[];
  /** The runtime's state directory (--root); "" for one of Skiff's own under its run directory. */
  runtime_root: string;
  kind: RuntimeHandlerKind;
}

export interface RuntimeServiceConfig {
  socket: string;
  /** The default OCI runtime (handler "" or "runc"). */
  runc: string;
  /** gVisor's runsc, offered as the handler "runsc" when it is installed; "" never offers it. */
  runsc: string;
  conmon: string;
  /** PID 1 of the pod sandboxes that need a pause process, bind-mounted read-only from the host. */
  catatonit: string;
  /**
   * A pause process for every pod, as before pods without a shared PID namespace ran without one;
   * false: only where one is needed (sandbox/pause-decision.ts in runtime-svc).
   */
  pause_every_pod: boolean;
  /** The first network configuration here (by name) is the pods' network. */
  cni_conf_dir: string;
  cni_bin_dirs: string[];
  /** Events a GetContainerEvents client may fall behind by before its stream is ended. */
  event_backlog: number;
  /** Where CDI spec files are read from; a later directory's devices override an earlier one's. */
  cdi_spec_dirs: string[];
  /** Cgroup parent of pods whose configuration names none. */
  cgroup_parent: string;
  /**
   * The host ids pods' user namespaces may map, as "FIRST:COUNT" (an /etc/subuid entry's numbers),
   * for uids and gids alike; "" for any id from MIN_USERNS_HOST_ID up.
   */
  userns_id_range: string;
  handlers: RuntimeHandlerConfig[];
  /**
   * The handler of a pod that names none (RunPodSandbox's runtime_handler ""): "" or "runc" for the
   * default runtime, else a handler of `handlers` ("runsc" when detected).
   */
  default_handler: string;
  /** Where this daemon serves Prometheus metrics (/metrics), host:port; "" switches them off. */
  metrics_address: string;
}

export interface StreamServiceConfig {
  /** Where the kubelet and clients reach the streaming server (Exec, Attach, PortForward URLs). */
  address: string;
  /** TCP port of the streaming server; 0 picks a free one. */
  port: number;
  /** A stream with no traffic for this long is closed: "4h", "30m", "90s", "1h30m". */
  idle_timeout: string;
  /** Root-only socket the runtime service registers requests on. */
  internal_socket: string;
  /** Exec, attach and port-forward connections open at once; more are answered 503. */
  max_connections: number;
  /** Streams a client may have open at once in one SPDY session; more are refused (REFUSED_STREAM). */
  max_streams_per_session: number;
  /** Forwarded TCP connections at once in one port-forward session; more fail on their error stream. */
  max_port_forward_connections: number;
  /** Where this daemon serves Prometheus metrics (/metrics), host:port; "" switches them off. */
  metrics_address: string;
}

export interface LogsServiceConfig {
  /** Root-only socket the runtime service tells logs-svc about containers on. */
  internal_socket: string;
  /** logs-svc's journal cursor and the sizes of the files it wrote; defaults to root/logs. */
  state_dir: string;
  /** The journalctl binary that follows the journal. */
  journalctl: string;
  /** Longest wait for a flush or a log reopen to see its barrier come back from the journal ("5s"). */
  flush_timeout: string;
  /** Where this daemon serves Prometheus metrics (/metrics), host:port; "" switches them off. */
  metrics_address: string;
}

/** The Node Resource Interface: plugins that adjust containers as runtime-svc creates them. */
export interface NriConfig {
  /** On by default, as in containerd 2.x: with no plugin connected it costs nothing. */
  enable: boolean;
  /** Root-only socket external plugins connect to. */
  socket: string;
  /** Pre-installed plugins, "<index>-<name>" executables, started with a connected socket. */
  plugin_dir: string;
  /** Their configuration: "<index>-<name>.conf", else "<name>.conf". */
  plugin_config_dir: string;
  /** How long a connected plugin has to register, and a registered one to answer one request. */
  registration_timeout: string;
  request_timeout: string;
}

export interface SkiffConfig {
  /** Persistent state: image store, container and sandbox records. */
  root: string;
  /** Volatile state: sockets and pid files. */
  run_dir: string;
  log_level: LogLevel;
  /** Where `skiff up --detach` writes the services' logs. */
  log_file: string;
  /**
   * Unused: `skiff up` served its restart counts here when its supervisor was a node process; each
   * daemon's own metrics now hold them (skiff_service_restarts_total). Still accepted and checked,
   * so that existing files load.
   */
  metrics_address: string;
  image: ImageServiceConfig;
  runtime: RuntimeServiceConfig;
  stream: StreamServiceConfig;
  logs: LogsServiceConfig;
  nri: NriConfig;
}

export class ConfigError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'ConfigError';
  }
}

export function defaultConfig(): SkiffConfig {
  return {
    root: '/var/lib/skiff',
    run_dir: '/run/skiff',
    log_level: 'info',
    log_file: '/var/log/skiff/skiff.log',
    metrics_address: '127.0.0.1:9705',
    image: {
      socket: '/run/skiff/image.sock',
      registries_config: '/etc/containers/registries.conf',
      max_concurrent_downloads: 3,
      pinned_images: [],
      max_layer_bytes: 32 * 1024 ** 3,
      max_layer_entries: 1_000_000,
      max_pax_header_bytes: 1024 * 1024,
      min_free_bytes: 1024 ** 3,
      pull_progress_timeout: '5m',
      metrics_address: '127.0.0.1:9701',
    },
    runtime: {
      socket: '/run/skiff/runtime.sock',
      runc: '/usr/local/sbin/runc',
      runsc: '/usr/bin/runsc',
      conmon: '/usr/bin/conmon',
      catatonit: '/usr/bin/catatonit',
      pause_every_pod: false,
      cni_conf_dir: '/etc/cni/net.d',
      cni_bin_dirs: ['/opt/cni/bin', '/usr/lib/cni'],
      cdi_spec_dirs: ['/etc/cdi', '/var/run/cdi'],
      event_backlog: 4096,
      cgroup_parent: '/skiff',
      userns_id_range: '',
      handlers: [],
      default_handler: '',
      metrics_address: '127.0.0.1:9702',
    },
    stream: {
      address: '127.0.0.1',
      port: 10010,
      idle_timeout: '4h',
      internal_socket: '/run/skiff/stream-internal.sock',
      max_connections: 1024,
      max_streams_per_session: 512,
      max_port_forward_connections: 128,
      metrics_address: '127.0.0.1:9703',
    },
    logs: {
      internal_socket: '/run/skiff/logs-internal.sock',
      state_dir: '/var/lib/skiff/logs',
      journalctl: '/usr/bin/journalctl',
      flush_timeout: '5s',
      metrics_address: '127.0.0.1:9704',
    },
    nri: {
      enable: true,
      socket: '/var/run/nri/nri.sock',
      plugin_dir: '/opt/nri/plugins',
      plugin_config_dir: '/etc/nri/conf.d',
      registration_timeout: '5s',
      request_timeout: '2s',
    },
  };
}

type Table = Record<string, unknown>;

const LOG_LEVELS: readonly LogLevel[] = ['trace', 'debug', 'info', 'warn', 'error', 'fatal'];

function isTable(v: unknown): v is Table {
  return typeof v === 'object' && v !== null && !Array.isArray(v) && !(v instanceof Date);
}

/** Overlays `source` on `target` key by key; an unknown key or a value of the wrong type is an error. */
function overlay(target: Table, source: Table, where: string): void {
  for (const [key, value] of Object.entries(source)) {
    const path = where ? `${where}.${key}` : key;
    if (!(key in target)) throw new ConfigError(`unknown configuration key "${path}"`);
    const current = target[key];
    if (isTable(current)) {
      if (!isTable(value)) throw new ConfigError(`"${path}" must be a table`);
      overlay(current, value, path);
      continue;
    }
    if (typeof current !== typeof value) {
      throw new ConfigError(`"${path}" must be a ${typeof current}, got ${JSON.stringify(value)}`);
    }
    target[key] = value;
  }
}

const HANDLER_NAME = /^[a-z0-9]([a-z0-9.-]{0,61}[a-z0-9])?$/;

/**
 * The lowest host id a pod's user namespace may map, as the kubelet has it: ids below are the
 * host's own users, root first, whom a pod's root must never become.
 */
export const MIN_USERNS_HOST_ID = 65536;

/** A range of host ids: `first` and the `count` ids from it. */
export interface IdRange {
  first: number;
  count: number;
}

/** `runtime.userns_id_range` ("FIRST:COUNT") as a range; undefined for "" (no range configured). */
export function parseIdRange(text: string): IdRange | undefined {
  if (text === '') return undefined;
  const m = /^(\d+):(\d+)$/.exec(text);
  const first = Number(m?.[1]);
  const count = Number(m?.[2]);
  if (!m || first < MIN_USERNS_HOST_ID || count < 1 || first + count > 2 ** 32) {
    throw new ConfigError(
      `"runtime.userns_id_range" must be "FIRST:COUNT" with FIRST at least ${MIN_USERNS_HOST_ID}, COUNT at least 1 and FIRST+COUNT at most 4294967296, or "" for none, got ${JSON.stringify(text)}`,
    );
  }
  return { first, count };
}

function validateRuntime(runtime: RuntimeServiceConfig): void {
  if (!Array.isArray(runtime.cni_bin_dirs) || !runtime.cni_bin_dirs.every((d) => typeof d === 'string' && d.startsWith('/'))) {
    throw new ConfigError('"runtime.cni_bin_dirs" must be a list of absolute paths');
  }
  if (!Number.isInteger(runtime.event_backlog) || runtime.event_backlog < 1) throw new ConfigError('"runtime.event_backlog" must be a positive integer');
  if (!Array.isArray(runtime.cdi_spec_dirs) || !runtime.cdi_spec_dirs.every((d) => typeof d === 'string' && d.startsWith('/'))) {
    throw new ConfigError('"runtime.cdi_spec_dirs" must be a list of absolute paths');
  }
  parseIdRange(runtime.userns_id_range);
  if (typeof runtime.runsc !== 'string' || (runtime.runsc !== '' && !runtime.runsc.startsWith('/'))) {
    throw new ConfigError(`"runtime.runsc" must be an absolute path, or "" to never offer the runsc handler, got ${JSON.stringify(runtime.runsc)}`);
  }
  if (!Array.isArray(runtime.handlers)) throw new ConfigError('"runtime.handlers" must be a list of tables ([[runtime.handlers]])');
  const seen = new Set<string>();
  for (const [i, h] of runtime.handlers.entries()) {
    const where = `runtime.handlers[${i}]`;
    if (!isTable(h)) throw new ConfigError(`"${where}" must be a table with "name" and "runtime_path"`);
    const unknown = Object.keys(h).filter((k) => !HANDLER_KEYS.includes(k));
    if (unknown.length > 0) throw new ConfigError(`unknown configuration key "${where}.${unknown[0]}"`);
    if (typeof h.name !== 'string' || !HANDLER_NAME.test(h.name)) {
      throw new ConfigError(`"${where}.name" must be a DNS label (lower-case letters, digits, '-', '.'), got ${JSON.stringify(h.name)}`);
    }
    if (h.name === 'runc') throw new ConfigError(`"${where}.name": "runc" is the default handler and cannot be redefined; set "runtime.runc" instead`);
    if (seen.has(h.name)) throw new ConfigError(`"${where}.name": handler "${h.name}" is defined twice`);
    seen.add(h.name);
    if (typeof h.runtime_path !== 'string' || !h.runtime_path.startsWith('/')) {
      throw new ConfigError(`"${where}.runtime_path" must be an absolute path, got ${JSON.stringify(h.runtime_path)}`);
    }
    const args: unknown = h.runtime_args ?? [];
    if (!Array.isArray(args) || !args.every((a) => typeof a === 'string' && a.startsWith('-'))) {
      throw new ConfigError(`"${where}.runtime_args" must be a list of flags (each starting with '-'), got ${JSON.stringify(args)}`);
    }
    const root: unknown = h.runtime_root ?? '';
    if (typeof root !== 'string' || (root !== '' && !root.startsWith('/'))) {
      throw new ConfigError(`"${where}.runtime_root" must be an absolute path, got ${JSON.stringify(root)}`);
    }
    const kind: unknown = h.kind ?? 'oci';
    if (kind !== 'oci' && kind !== 'sandbox') throw new ConfigError(`"${where}.kind" must be "oci" or "sandbox", got ${JSON.stringify(kind)}`);
  }
  // Plain objects from here on (the TOML parser gives tables without a prototype).
  runtime.handlers = runtime.handlers.map((h) => ({
    name: h.name,
    runtime_path: h.runtime_path,
    runtime_args: [...(h.runtime_args ?? [])],
    runtime_root: h.runtime_root ?? '',
    kind: h.kind ?? 'oci',
  }));
}

const HANDLER_KEYS = ['name', 'runtime_path', 'runtime_args', 'runtime_root', 'kind'];

const DURATION = /^(?:(\d+)h)?(?:(\d+)m)?(?:(\d+)s)?$/;

/** "4h", "30m", "90s", "1h30m" (or a bare number of seconds) in milliseconds; undefined if malformed or zero. */
export function parseDuration(text: string): number | undefined {
  const trimmed = text.trim();
  if (/^\d+$/.test(trimmed)) return Number(trimmed) > 0 ? Number(trimmed) * 1000 : undefined;
  const m = DURATION.exec(trimmed);
  if (!m || trimmed === '') return undefined;
  const ms = ((Number(m[1] ?? 0) * 60 + Number(m[2] ?? 0)) * 60 + Number(m[3] ?? 0)) * 1000;
  return ms > 0 ? ms : undefined;
}

function validateStream(stream: StreamServiceConfig): void {
  if (!/^[0-9.]+$|^[0-9a-fA-F:]+$|^localhost$/.test(stream.address)) {
    throw new ConfigError(`"stream.address" must be an IP address, got ${JSON.stringify(stream.address)}`);
  }
  if (!Number.isInteger(stream.port) || stream.port < 0 || stream.port > 65535) {
    throw new ConfigError(`"stream.port" must be an integer from 0 to 65535, got ${stream.port}`);
  }
  if (parseDuration(stream.idle_timeout) === undefined) {
    throw new ConfigError(`"stream.idle_timeout" must be a duration such as "4h", "30m" or "90s", got ${JSON.stringify(stream.idle_timeout)}`);
  }
  for (const key of ['max_connections', 'max_streams_per_session', 'max_port_forward_connections'] as const) {
    const n = stream[key];
    if (!Number.isInteger(n) || n < 1 || n > 1_000_000) throw new ConfigError(`"stream.${key}" must be an integer from 1 to 1000000, got ${n}`);
  }
}

function validate(config: SkiffConfig): void {
  if (!LOG_LEVELS.includes(config.log_level)) {
    throw new ConfigError(`"log_level" must be one of ${LOG_LEVELS.join(', ')}`);
  }
  for (const [key, value] of [
    ['root', config.root],
    ['run_dir', config.run_dir],
    ['log_file', config.log_file],
    ['image.socket', config.image.socket],
    ['runtime.socket', config.runtime.socket],
    ['runtime.runc', config.runtime.runc],
    ['runtime.conmon', config.runtime.conmon],
    ['runtime.catatonit', config.runtime.catatonit],
    ['runtime.cni_conf_dir', config.runtime.cni_conf_dir],
    ['runtime.cgroup_parent', config.runtime.cgroup_parent],
    ['stream.internal_socket', config.stream.internal_socket],
    ['logs.internal_socket', config.logs.internal_socket],
    ['logs.state_dir', config.logs.state_dir],
    ['logs.journalctl', config.logs.journalctl],
    ['nri.socket', config.nri.socket],
    ['nri.plugin_dir', config.nri.plugin_dir],
    ['nri.plugin_config_dir', config.nri.plugin_config_dir],
  ] as const) {
    if (!value.startsWith('/')) throw new ConfigError(`"${key}" must be an absolute path, got "${value}"`);
  }
  if (!Array.isArray(config.image.pinned_images) || !config.image.pinned_images.every((p) => typeof p === 'string')) {
    throw new ConfigError('"image.pinned_images" must be a list of image references');
  }
  validateRuntime(config.runtime);
  validateStream(config.stream);
  for (const [key, value] of [
    ['metrics_address', config.metrics_address],
    ['image.metrics_address', config.image.metrics_address],
    ['runtime.metrics_address', config.runtime.metrics_address],
    ['stream.metrics_address', config.stream.metrics_address],
    ['logs.metrics_address', config.logs.metrics_address],
  ] as const) {
    if (typeof value !== 'string') throw new ConfigError(`"${key}" must be a string such as "127.0.0.1:9702", or "" to switch metrics off`);
    if (value !== '') {
      try {
        parseMetricsAddress(value);
      } catch (err) {
        throw new ConfigError(`"${key}": ${(err as Error).message}`);
      }
    }
  }
  if (parseDuration(config.image.pull_progress_timeout) === undefined) {
    throw new ConfigError(`"image.pull_progress_timeout" must be a duration such as "5m", got ${JSON.stringify(config.image.pull_progress_timeout)}`);
  }
  for (const key of ['registration_timeout', 'request_timeout'] as const) {
    if (parseDuration(config.nri[key]) === undefined) throw new ConfigError(`"nri.${key}" must be a duration such as "2s", got ${JSON.stringify(config.nri[key])}`);
  }
  if (parseDuration(config.logs.flush_timeout) === undefined) {
    throw new ConfigError(`"logs.flush_timeout" must be a duration such as "5s", got ${JSON.stringify(config.logs.flush_timeout)}`);
  }
  for (const key of ['max_layer_bytes', 'max_layer_entries', 'max_pax_header_bytes', 'min_free_bytes'] as const) {
    const value = config.image[key];
    const least = key === 'min_free_bytes' ? 0 : 1;
    if (!Number.isSafeInteger(value) || value < least) {
      throw new ConfigError(`"image.${key}" must be an integer of at least ${least}, got ${value}`);
    }
  }
  const n = config.image.max_concurrent_downloads;
  if (!Number.isInteger(n) || n < 1 || n > 64) {
    throw new ConfigError(`"image.max_concurrent_downloads" must be an integer from 1 to 64, got ${n}`);
  }
}

/** The file to read: the one asked for, else $SKIFF_CONFIG, else the default path. */
export function configPathFor(path?: string): { file: string; explicit: boolean } {
  if (path !== undefined) return { file: path, explicit: true };
  const fromEnv = process.env['SKIFF_CONFIG'];
  if (fromEnv) return { file: fromEnv, explicit: true };
  return { file: DEFAULT_CONFIG_PATH, explicit: false };
}

/**
 * Reads the TOML configuration. A missing file at the default path means "all defaults";
 * a missing file that was asked for explicitly is an error.
 */
export async function loadConfig(path?: string): Promise<SkiffConfig> {
  const { file, explicit } = configPathFor(path);
  const config = defaultConfig();
  let text: string | undefined;
  try {
    text = await fs.readFile(file, 'utf8');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOENT' || explicit) {
      throw new ConfigError(`cannot read configuration ${file}: ${(err as Error).message}`);
    }
  }
  if (text !== undefined) {
    let parsed: Table;
    try {
      parsed = parseToml(text) as Table;
    } catch (err) {
      throw new ConfigError(`${file}: ${(err as Error).message}`);
    }
    // Sockets follow run_dir unless set on their own.
    const runDir = typeof parsed['run_dir'] === 'string' ? parsed['run_dir'] : undefined;
    if (runDir) {
      config.image.socket = join(runDir, 'image.sock');
      config.runtime.socket = join(runDir, 'runtime.sock');
      config.stream.internal_socket = join(runDir, 'stream-internal.sock');
      config.logs.internal_socket = join(runDir, 'logs-internal.sock');
    }
    // logs-svc's state follows root unless set on its own.
    if (typeof parsed['root'] === 'string') config.logs.state_dir = join(parsed['root'], 'logs');
    try {
      overlay(config as unknown as Table, parsed, '');
    } catch (err) {
      throw new ConfigError(`${file}: ${(err as Error).message}`);
    }
  }
  validate(config);
  await addDetectedRunsc(config.runtime);
  validateDefaultHandler(config.runtime);
  return config;
}

/** Checked once the detected runsc handler is known: the default may name it. */
function validateDefaultHandler(runtime: RuntimeServiceConfig): void {
  const name: unknown = runtime.default_handler;
  if (name === '' || name === 'runc' || runtime.handlers.some((h) => h.name === name)) return;
  const known = ['runc', ...runtime.handlers.map((h) => h.name)].join(', ');
  throw new ConfigError(`"runtime.default_handler" names ${JSON.stringify(name)}, which is not a handler of this node (${known})`);
}

/** Flags of the built-in runsc handler; see packages/runtime-svc/README.md ("gVisor"). */
export const RUNSC_DEFAULT_ARGS = ['--platform=systrap', '--network=host', '--overlay2=none', '--oci-seccomp'];

/**
 * The default configuration offers gVisor as the handler "runsc" whenever `runtime.runsc` names an
 * executable, unless a [[runtime.handlers]] entry defines "runsc" itself.
 */
async function addDetectedRunsc(runtime: RuntimeServiceConfig): Promise<void> {
  if (runtime.runsc === '' || runtime.handlers.some((h) => h.name === 'runsc')) return;
  try {
    await fs.access(runtime.runsc, fsConstants.X_OK);
  } catch {
    return;
  }
  runtime.handlers.push({ name: 'runsc', runtime_path: runtime.runsc, runtime_args: [...RUNSC_DEFAULT_ARGS], runtime_root: '', kind: 'sandbox' });
}
