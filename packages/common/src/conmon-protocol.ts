/**
 * The variables through which conmon finds its pipes to the parent, each holding a descriptor
 * number: messages out (one JSON object per line: the container's pid after `runtime create`, an
 * exec's pid or exit code), start bytes in (conmon waits for one before it runs the runtime),
 * attach-ready out. runtime-svc gives only the sync pipe, which runReportingCommand hands over
 * and reads the first line of; stream-svc's attached exec gives all three.
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

/**
 * One message conmon writes on its sync or attach pipe, a JSON object per line: a pid or an exit
 * code ("data" from API version 1 on, "pid" or "exit_code" before), negative with "message"
 * (the runtime's stderr) on failure.
 */
export interface ConmonMessage {
  value: number;
  message?: string;
}

/** A line that is no message of conmon's. */
export class ConmonMessageError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'ConmonMessageError';
  }
}

export function parseConmonMessage(line: string): ConmonMessage {
  let parsed: unknown;
  try {
    parsed = JSON.parse(line);
  } catch {
    throw new ConmonMessageError(`conmon wrote an unreadable message: ${line.slice(0, 200)}`);
  }
  const o = (typeof parsed === 'object' && parsed !== null ? parsed : {}) as Record<string, unknown>;
  const value = o['data'] ?? o['pid'] ?? o['exit_code'];
  if (typeof value !== 'number') throw new ConmonMessageError(`conmon's message has no value (no pid or exit code): ${line.slice(0, 200)}`);
  const out: ConmonMessage = { value };
  if (typeof o['message'] === 'string') out.message = o['message'];
  return out;
}
