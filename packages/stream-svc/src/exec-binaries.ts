import { SANDBOX_RUNTIME_LAUNCHER, type ExecRuntime, type RuntimeServiceConfig } from '@skiff/common/core';

/** The runtime a command is executed through (as runc's command line). */
export interface RuntimeBinary {
  path: string;
  /** runc --root */
  root: string;
  /** Further global arguments (e.g. --systemd-cgroup). */
  args: string[];
  /** What conmon runs in the runtime's place, given its path first (a sandbox-kind runtime's launcher). */
  launcher?: string;
}

/** What an exec runs: the container's runtime, and conmon for one with a terminal. */
export interface ExecBinaries {
  runtime: RuntimeBinary;
  conmon: string;
}

/**
 * The binaries of an exec, from stream-svc's own configuration (never from the request): the
 * runtime of the container's RuntimeClass handler, by name. A handler removed from the
 * configuration since the container was made runs with the default runtime, as runtime-svc
 * treats it too.
 */
export function execBinaries(config: Pick<RuntimeServiceConfig, 'runc' | 'conmon' | 'handlers'>, runtime: ExecRuntime): ExecBinaries {
  const handler = config.handlers.find((h) => h.name === runtime.handler);
  const binary: RuntimeBinary = { path: handler?.runtime_path ?? config.runc, root: runtime.root, args: runtime.args };
  if (handler?.kind === 'sandbox') binary.launcher = SANDBOX_RUNTIME_LAUNCHER;
  return { runtime: binary, conmon: config.conmon };
}
