import { constants, promises as fs } from 'node:fs';
import { join } from 'node:path';
import { errnoCode, isProcessAlive, readPidFile, SANDBOX_RUNTIME_LAUNCHER } from '@skiff/common';
import type { Runc } from '../oci/runc.js';
import { readArgv } from '../process/processes.js';

/** The FIFO through which the holder of @skiff/common's helpers/sandbox-runtime.sh learns that its container started. */
export function startGatePath(bundle: string): string {
  return join(bundle, 'start-gate');
}

/**
 * Starts a container that joins its pod's sandbox under a sandbox-kind runtime (runsc). The runtime
 * gives such a container the standard I/O of `runsc start`: those are the pipes conmon gave the
 * holder process that @skiff/common's helpers/sandbox-runtime.sh left behind (conmon's "container pid"), reopened
 * through /proc. Once started, the holder is told to wait for the container.
 */
export async function startInSandbox(runc: Runc, id: string, holderPid: number, bundle: string): Promise<void> {
  await runc.startWithStdioOf(id, holderPid);
  if (!(await releaseStartGate(bundle))) throw new Error(`the holder process ${holderPid} of container ${id} is gone; its exit could not be watched`);
}

/**
 * Tells the holder that its container runs. False when no holder reads the gate (it has exited,
 * or was told before).
 */
export async function releaseStartGate(bundle: string): Promise<boolean> {
  let gate: fs.FileHandle;
  try {
    gate = await fs.open(startGatePath(bundle), constants.O_WRONLY | constants.O_NONBLOCK);
  } catch (err) {
    if (errnoCode(err) === 'ENXIO' || errnoCode(err) === 'ENOENT') return false;
    throw err;
  }
  try {
    await gate.write('started\n');
    return true;
  } finally {
    await gate.close();
  }
}

/**
 * Kills the holder of container `id` (its pid is where conmon read the container's) if it is
 * still there: one whose container was never started would otherwise wait for ever.
 */
export async function killHolder(id: string, containerPidFile: string): Promise<void> {
  const pid = await readPidFile(containerPidFile);
  if (pid === undefined || !isProcessAlive(pid)) return;
  const argv = (await readArgv(pid)) ?? [];
  if (argv.includes(SANDBOX_RUNTIME_LAUNCHER) && argv.includes(id)) process.kill(pid, 'SIGKILL');
}
