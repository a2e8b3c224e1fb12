import type { RuntimeHandlerKind } from './config.js';
import { SANDBOX_RUNTIME_LAUNCHER } from './sandbox-runtime-launcher.js';

/**
 * A RuntimeClass handler's OCI runtime as a command runs it: what runtime-svc hands conmon for a
 * container or an ExecSync, and what travels with each Exec that stream-svc serves.
 */
export interface RuntimeBinary {
  /** The runtime's program (runc, runsc, or another with runc's command line). */
  path: string;
  /** Its state directory (--root). */
  root: string;
  /** Further global arguments (--systemd-cgroup, runsc's --platform=..., the handler's runtime_args). */
  args: string[];
  /** A sandbox-kind runtime (runsc) runs through SANDBOX_RUNTIME_LAUNCHER. */
  kind: RuntimeHandlerKind;
}

/** The program and arguments that run the runtime's `command` (`exec ...`): a sandbox-kind one through its launcher. */
export function runtimeCommand(runtime: RuntimeBinary, command: readonly string[]): { file: string; args: string[] } {
  const args = [`--root=${runtime.root}`, ...runtime.args, ...command];
  return runtime.kind === 'sandbox' ? { file: SANDBOX_RUNTIME_LAUNCHER, args: [runtime.path, ...args] } : { file: runtime.path, args };
}

/** conmon's --runtime and --runtime-arg flags, which have it run the runtime as runtimeCommand does. */
export function conmonRuntimeArgs(runtime: RuntimeBinary): string[] {
  const { file, args } = runtimeCommand(runtime, []);
  return ['--runtime', file, ...args.flatMap((arg) => ['--runtime-arg', arg])];
}
