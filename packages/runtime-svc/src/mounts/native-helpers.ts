import { fileURLToPath } from 'node:url';
import { runCommand } from '@skiff/common';
import { MountError } from './mounts.js';

/** The C helpers of helpers/*.c, which scripts/setup.sh compiles into helpers/bin/. */
export type NativeHelper = 'mount-api' | 'pin-namespaces' | 'pod-ipc-uts' | 'pod-netns' | 'pod-userns';

/** A helper's exit status when the kernel (or a filesystem) lacks what it needs. */
const EXIT_UNSUPPORTED = 3;
/** A helper's exit status when the process it was pointed at is not the one named (it exited, or its pid is another's). */
const EXIT_NOT_THAT_PROCESS = 4;

/** The kernel lacks a feature a request needs: FailedPrecondition, naming the feature. */
export class KernelSupportError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'KernelSupportError';
  }
}

export function nativeHelperPath(name: NativeHelper): string {
  return fileURLToPath(new URL(`../../helpers/bin/${name}`, import.meta.url));
}

/** The process a helper was to act on has exited (or its pid belongs to another process now). */
export class ProcessGoneError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'ProcessGoneError';
  }
}

/** Runs a helper; `what` says what it was for in the error, which carries the helper's own reason. */
export async function runNativeHelper(name: NativeHelper, args: readonly string[], what: string): Promise<void> {
  const path = nativeHelperPath(name);
  let result;
  try {
    result = await runCommand(path, args, { timeoutMs: 30_000 });
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') throw new MountError(`${what}: the helper ${path} is missing; scripts/setup.sh builds it`);
    throw err;
  }
  if (result.code === 0) return;
  const reason = result.stderr.trim() || `${name} exited with ${result.code ?? result.signal}`;
  if (result.code === EXIT_UNSUPPORTED) throw new KernelSupportError(`${what}: ${reason}`);
  if (result.code === EXIT_NOT_THAT_PROCESS) throw new ProcessGoneError(`${what}: ${reason}`);
  throw new MountError(`${what}: ${reason}`);
}
