import type { ExecRuntime, RuntimeServiceConfig } from '@skiff/common/core';

/** The runtime a command is executed through (as runc's command line). */
export interface RuntimeBinary {
  path: string;
  /** runc --root */
  root: string;
  /** Further global arguments (e.g. --systemd-cgroup). */
  args: string[];
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
  return { runtime: { path: handler?.runtime_path ?? config.runc, root: runtime.root, args: runtime.args }, conmon: config.conmon };
}
