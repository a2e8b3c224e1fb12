import { pollUntil, type RuntimeHandlerKind } from '@skiff/common';
import { signalSameProcess } from '../process/processes.js';
import { waitForExitCode, type ExitFileSignal } from '../conmon/exit-file.js';
import { RuncError, type Runc } from './runc.js';

export interface StopOptions {
  /** conmon's --exit-dir: the exit file there is how we learn the container ended. */
  exitDir: string;
  /** Grace period after the stop signal before SIGKILL; 0 kills at once. */
  timeoutMs: number;
  /** The image's STOPSIGNAL (name or number); SIGTERM by default. */
  signal?: NodeJS.Signals | number;
  /** How long to wait for the exit file after SIGKILL before giving up. */
  killWaitMs?: number;
  /** Wakes the wait for the exit file as it appears (the exit watcher); polled otherwise. */
  exitFileAppeared?: ExitFileSignal;
  /** Sends the stop signal to the container's init without runc (else `runc kill`). */
  sendStopSignal?: StopSignalSender;
  /**
   * Sends SIGKILL to every process of the container without runc (else `runc kill --all`): for a
   * container whose init is alone in its PID namespace, SIGKILL to the init is that.
   */
  killAll?: StopSignalSender;
}

/** A pause process reads /proc only: polling it often costs little and ends a pod's stop sooner. */
const EXIT_POLL_MS = 4;

export class StopTimeoutError extends Error {
  constructor(id: string, waitedMs: number) {
    super(`container ${id} did not exit within ${waitedMs} ms of SIGKILL; its process may be stuck in the kernel (D state)`);
    this.name = 'StopTimeoutError';
  }
}

async function killIgnoringStopped(runc: Runc, id: string, signal: NodeJS.Signals | number, all: boolean): Promise<void> {
  try {
    await runc.kill(id, signal, { all });
  } catch (err) {
    if (err instanceof RuncError && (err.notRunning || err.notFound)) return;
    throw err;
  }
}

/** Sends the stop signal to the container's init without runc; resolves when it is sent or the process is gone. */
export type StopSignalSender = (signal: NodeJS.Signals | number) => Promise<void>;

/**
 * The signals of a runc container's init, named by its pid and start time, sent directly: no
 * `runc kill` (~6 ms) per signal, and never to a process that got the pid since. The final SIGKILL
 * too when `initEndsAll` (the container is alone in its PID namespace, so SIGKILL to its init ends
 * every process in it); otherwise the rest of its processes need `runc kill --all`. Nothing for
 * another kind of runtime, or an init whose start time is not known.
 */
export function directSignals(kind: RuntimeHandlerKind, init: { pid?: number | undefined; pidStartTime?: number | undefined }, initEndsAll: boolean): Pick<StopOptions, 'sendStopSignal' | 'killAll'> {
  const { pid, pidStartTime } = init;
  if (kind !== 'oci' || pid === undefined || pidStartTime === undefined) return {};
  const send = async (signal: NodeJS.Signals | number): Promise<void> => signalSameProcess(pid, pidStartTime, signal);
  return initEndsAll ? { sendStopSignal: send, killAll: send } : { sendStopSignal: send };
}

/** Resolves true once the container has exited, false if it still runs after `withinMs`. */
export type ExitWatch = (withinMs: number) => Promise<boolean>;

/**
 * The stop signal, then SIGKILL to every process in the container once the grace period runs
 * out; `exited` tells when the container has ended.
 */
async function signalUntilExited(runc: Runc, id: string, exited: ExitWatch, options: Omit<StopOptions, 'exitDir'>): Promise<void> {
  if (await exited(0)) return;
  if (options.timeoutMs > 0) {
    const signal = options.signal ?? 'SIGTERM';
    await (options.sendStopSignal ? options.sendStopSignal(signal) : killIgnoringStopped(runc, id, signal, false));
    if (await exited(options.timeoutMs)) return;
  }
  // --all reaches processes that joined the container's cgroup but are not its init's children.
  await (options.killAll ? options.killAll('SIGKILL') : killIgnoringStopped(runc, id, 'SIGKILL', true));
  const killWaitMs = options.killWaitMs ?? 10_000;
  if (!(await exited(killWaitMs))) throw new StopTimeoutError(id, killWaitMs);
}

/** Stops a conmon-monitored container. Resolves with the exit code conmon recorded. */
export async function stopContainer(runc: Runc, id: string, options: StopOptions): Promise<number> {
  let code: number | undefined;
  await signalUntilExited(runc, id, async (withinMs) => (code = await waitForExitCode(options.exitDir, id, withinMs, options.exitFileAppeared)) !== undefined, options);
  return code!;
}

/**
 * Stops a container that has no monitor (a pod's pause process): its exit is seen by polling
 * `isRunning`, which must tell a zombie or a recycled pid from the container's live init. The
 * signals go as `options` say (see StopOptions).
 */
export async function stopUnmonitoredContainer(
  runc: Runc,
  id: string,
  isRunning: () => Promise<boolean>,
  options: Omit<StopOptions, 'exitDir'>,
): Promise<void> {
  const exited: ExitWatch = async (withinMs) => (await pollUntil(async () => ((await isRunning()) ? undefined : true), withinMs, EXIT_POLL_MS)) === true;
  await signalUntilExited(runc, id, exited, options);
}
