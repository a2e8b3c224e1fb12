export interface TerminalSize {
  width: number;
  height: number;
}

/** How a streamed command ended: its exit code, or why it could not run. */
export type StreamOutcome = { exitCode: number } | { error: string };

/**
 * One client's exec or attach stream, whatever the wire protocol. Handlers for input are set
 * once; output written after the session ended is dropped.
 */
export interface StreamSession {
  /** Client stdin; `null` marks its end. */
  onStdin(handler: (chunk: Buffer | null) => void): void;
  onResize(handler: (size: TerminalSize) => void): void;
  /** The client went away (or stayed idle too long) before `finish`. */
  onClientGone(handler: () => void): void;
  writeStdout(chunk: Buffer): void;
  writeStderr(chunk: Buffer): void;
  finish(outcome: StreamOutcome): void;
}
