import { promises as fs } from 'node:fs';
import { join } from 'node:path';
import { CONMON_PIPE_ENV, conmonEnvironment, parseConmonMessage, readPidFile, isProcessAlive, runReportingCommand, CommandTimeoutError, conmonRuntimeArgs, type RuntimeBinary } from '@skiff/common';

export const DEFAULT_CONMON_PATH = '/usr/bin/conmon';

/** Where conmon sends the container's stdout/stderr. Several may be given at once. */
export type LogDriver =
  /** The CRI log format the kubelet reads (`<time> <stream> <P|F> <text>` lines). */
  | { driver: 'k8s-file'; path: string }
  /** The systemd journal, with CONTAINER_ID_FULL / CONTAINER_NAME / CONTAINER_TAG fields. */
  | { driver: 'journald' };

export interface ContainerMonitorOptions {
  conmonPath?: string;
  /** The container's runtime, the same one runtime-svc's Runc runs (runtimeForConmon). */
  runtime: RuntimeBinary;
  id: string;
  /** Shown as CONTAINER_NAME in the journal. */
  name?: string;
  bundle: string;
  /** runc writes the container's init pid here. */
  containerPidFile: string;
  /** conmon writes its own (the monitor's) pid here. */
  conmonPidFile: string;
  /** conmon writes `<exitDir>/<id>` holding the exit code when the container ends. */
  exitDir: string;
  /** conmon also writes `<persistDir>/exit`. */
  persistDir?: string;
  /** conmon creates `<socketDir>/<id>` -> bundle, holding the attach socket. */
  socketDir: string;
  logDrivers: LogDriver[];
  /** CONTAINER_TAG and SYSLOG_IDENTIFIER in the journal; only with the journald driver. */
  logTag?: string;
  logSizeMax?: number;
  terminal?: boolean;
  /** Keep a stdin pipe the attach socket writes into. */
  stdin?: boolean;
  /** Keep stdin open after the first attached client detaches (CRI StdinOnce=false). */
  leaveStdinOpen?: boolean;
  noPivot?: boolean;
  /** conmon's own messages go to syslog (the journal) too. */
  syslog?: boolean;
  logLevel?: 'error' | 'warn' | 'info' | 'debug' | 'trace';
  /** Limit on the whole create: conmon forking, runc create, the pid coming back. */
  timeoutMs?: number;
}

export interface MonitoredContainer {
  /** The container's init process (host pid namespace). */
  containerPid: number;
  /** The long-lived conmon that watches the container and writes its exit file. */
  conmonPid: number;
}

export class ConmonError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'ConmonError';
  }
}

function logPathArg(d: LogDriver): string {
  if (d.driver === 'journald') return 'journald:';
  // conmon splits on ':'; a path with one would be cut short.
  if (d.path.includes(':')) throw new ConmonError(`log path ${d.path} contains ':', which conmon cannot handle`);
  return `k8s-file:${d.path}`;
}

export function containerMonitorArgs(o: ContainerMonitorOptions): string[] {
  if (o.logDrivers.length === 0) throw new ConmonError('at least one log driver is needed');
  if (o.logTag && !o.logDrivers.some((d) => d.driver === 'journald')) {
    throw new ConmonError('a log tag is only supported with the journald log driver');
  }
  const args = [
    '--cid', o.id,
    '--cuuid', o.id,
    '--bundle', o.bundle,
    ...conmonRuntimeArgs(o.runtime),
    '--container-pidfile', o.containerPidFile,
    '--conmon-pidfile', o.conmonPidFile,
    '--exit-dir', o.exitDir,
    '--socket-dir-path', o.socketDir,
  ];
  if (o.name) args.push('--name', o.name);
  if (o.persistDir) args.push('--persist-dir', o.persistDir);
  for (const d of o.logDrivers) args.push('--log-path', logPathArg(d));
  if (o.logTag) args.push('--log-tag', o.logTag);
  if (o.logSizeMax && o.logSizeMax > 0) args.push('--log-size-max', String(o.logSizeMax));
  if (o.terminal) args.push('--terminal');
  if (o.stdin) args.push('--stdin');
  if (o.stdin && o.leaveStdinOpen) args.push('--leave-stdin-open');
  if (o.noPivot) args.push('--no-pivot');
  if (o.syslog) args.push('--syslog');
  if (o.logLevel) args.push('--log-level', o.logLevel);
  return args;
}

/**
 * Creates a container through conmon: conmon double-forks and runs `runc create`, so the
 * container and its monitor are never children of this process and outlive it. Resolves once
 * runc has created the container (state "created"); `runc start` runs it. conmon is started like
 * any command (through the spawn helper when this process uses one); the monitor it forks reports
 * the container's pid, or runc's error, on the sync pipe.
 */
export async function createContainerWithMonitor(o: ContainerMonitorOptions): Promise<MonitoredContainer> {
  const timeoutMs = o.timeoutMs ?? 60_000;
  const conmonPath = o.conmonPath ?? DEFAULT_CONMON_PATH;
  const args = containerMonitorArgs(o);
  for (const dir of [o.exitDir, o.socketDir, ...(o.persistDir ? [o.persistDir] : [])]) await fs.mkdir(dir, { recursive: true });
  try {
    const result = await runReportingCommand(conmonPath, args, CONMON_PIPE_ENV.sync, { env: conmonEnvironment(), cwd: o.bundle, timeoutMs }).catch((err: unknown) => {
      if (err instanceof CommandTimeoutError) throw new ConmonError(`conmon for ${o.id} reported no container pid within ${timeoutMs} ms${err.stderr ? `: ${err.stderr.trim()}` : ''}`);
      throw err;
    });
    const stderrText = result.stderr.trim();
    if (result.code !== 0) throw new ConmonError(`conmon for ${o.id} exited with ${result.code ?? result.signal}: ${stderrText || 'no error output'}`);
    const sync = result.report === undefined ? undefined : parseConmonMessage(result.report);
    if (!sync) throw new ConmonError(`conmon for ${o.id} ended without reporting a container pid${stderrText ? `: ${stderrText}` : ''}`);
    if (sync.value <= 0) {
      throw new ConmonError(`runc could not create container ${o.id}: ${sync.message?.trim() || 'no error output'}`);
    }
    const conmonPid = await readPidFile(o.conmonPidFile);
    if (conmonPid === undefined) throw new ConmonError(`conmon for ${o.id} did not write ${o.conmonPidFile}`);
    return { containerPid: sync.value, conmonPid };
  } catch (err) {
    // A monitor stuck half-way must not linger; its container (if any) is the caller's to delete.
    const monitor = await readPidFile(o.conmonPidFile);
    if (monitor !== undefined && isProcessAlive(monitor)) process.kill(monitor, 'SIGKILL');
    throw err;
  }
}

/**
 * Removes what conmon leaves behind for a deleted container: its exit file and the
 * `<socketDir>/<id>` link to the bundle's attach socket.
 */
export async function removeMonitorFiles(o: { id: string; exitDir: string; socketDir: string }): Promise<void> {
  await fs.rm(join(o.exitDir, o.id), { force: true });
  await fs.rm(join(o.socketDir, o.id), { force: true, recursive: true });
}
