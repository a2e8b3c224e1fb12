/**
 * The variables through which conmon finds its pipes to the parent, each holding a descriptor
 * number: messages out (a pid, an exit code), start bytes in, attach-ready out.
 */
export const CONMON_PIPE_ENV = { sync: '_OCI_SYNCPIPE', start: '_OCI_STARTPIPE', attach: '_OCI_ATTACHPIPE' } as const;

export type ConmonPipe = keyof typeof CONMON_PIPE_ENV;

/** Variables that would make conmon or runc think they were socket-activated or notify-managed. */
const STRIPPED_ENV = ['NOTIFY_SOCKET', 'LISTEN_PID', 'LISTEN_FDS', 'LISTEN_FDNAMES'];

/**
 * This process's environment for conmon, without what would make it or runc think they were
 * socket-activated, and with the descriptor of each pipe given in `pipes`.
 */
export function conmonEnvironment(pipes: Partial<Record<ConmonPipe, number>> = {}): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { ...process.env };
  for (const key of STRIPPED_ENV) delete env[key];
  for (const [pipe, fd] of Object.entries(pipes) as [ConmonPipe, number][]) env[CONMON_PIPE_ENV[pipe]] = String(fd);
  return env;
}
