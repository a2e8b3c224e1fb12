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
  /**
   * Output to the client; false once the client's buffer is over its high-water mark: the writer
   * then pauses its source until `onDrain`. Output after the end is dropped (and answers true).
   */
  writeStdout(chunk: Buffer): boolean;
  writeStderr(chunk: Buffer): boolean;
  /** The client's buffer went back under its low-water mark. */
  onDrain(handler: () => void): void;
  finish(outcome: StreamOutcome): void;
}

/**
 * The input half of a StreamSession, whatever the wire protocol: stdin and resizes that arrive
 * before the runner sets its handlers are held and handed over in order once it does.
 */
export abstract class BufferedInputSession implements StreamSession {
  private pendingStdin: (Buffer | null)[] = [];
  private pendingResize: TerminalSize[] = [];
  private stdinHandler: (chunk: Buffer | null) => void = (chunk) => this.pendingStdin.push(chunk);
  private resizeHandler: (size: TerminalSize) => void = (size) => this.pendingResize.push(size);
  private goneHandler: () => void = () => undefined;
  private drainHandler: () => void = () => undefined;

  onStdin(handler: (chunk: Buffer | null) => void): void {
    this.stdinHandler = handler;
    for (const chunk of this.pendingStdin.splice(0)) handler(chunk);
  }
  onResize(handler: (size: TerminalSize) => void): void {
    this.resizeHandler = handler;
    for (const size of this.pendingResize.splice(0)) handler(size);
  }
  onClientGone(handler: () => void): void {
    this.goneHandler = handler;
  }

  onDrain(handler: () => void): void {
    this.drainHandler = handler;
  }

  abstract writeStdout(chunk: Buffer): boolean;
  abstract writeStderr(chunk: Buffer): boolean;
  abstract finish(outcome: StreamOutcome): void;

  protected receivedStdin(chunk: Buffer | null): void {
    this.stdinHandler(chunk);
  }
  protected receivedResize(size: TerminalSize): void {
    this.resizeHandler(size);
  }
  protected drained(): void {
    this.drainHandler();
  }
  protected clientWentAway(): void {
    this.goneHandler();
  }
}
