import { spawn, type ChildProcess } from 'node:child_process';
import type { Readable, Writable } from 'node:stream';
import { conmonEnvironment, ConmonMessageError, conmonRuntimeArgs, parseConmonMessage as readConmonMessage, type RuntimeBinary } from '@skiff/common/core';

/** conmon's pipes to its parent, as the child's fds: messages out, start bytes in, attach-ready out. */
const SYNC_FD = 3;
const START_FD = 4;
const ATTACH_FD = 5;

export interface ExecConmonOptions {
  conmonPath: string;
  runtime: RuntimeBinary;
  containerId: string;
  /** Names the session in conmon's messages. */
  sessionId: string;
  /** Holds the attach socket (`attach`), control fifo (`ctl`), pid file and process spec. */
  dir: string;
  processFile: string;
  pidFile: string;
  terminal: boolean;
  stdin: boolean;
}

/** The conmon arguments for an attached exec session (API version 1: pid first, then the exit code). */
export function execConmonArgs(o: ExecConmonOptions): string[] {
  const args = [
    '--api-version',
    '--cid', o.containerId,
    '--cuuid', o.sessionId,
    ...conmonRuntimeArgs(o.runtime),
    '--bundle', o.dir,
    '--full-attach',
    '--socket-dir-path', o.dir,
    '--container-pidfile', o.pidFile,
    '--exec',
    '--exec-attach',
    '--exec-process-spec', o.processFile,
    // Output reaches the client through the attach socket only.
    '--log-path', 'none:',
    '--sync',
  ];
  if (o.terminal) args.push('--terminal');
  if (o.stdin) args.push('--stdin');
  return args;
}

/** One JSON message from conmon: `data` is a pid or an exit code; negative with `message` on failure. */
export interface ConmonMessage {
  data: number;
  message?: string;
}

/** Reads newline-separated JSON messages from one of conmon's pipes, one at a time. */
export class MessagePipe {
  private buffer = '';
  private queue: ConmonMessage[] = [];
  private waiting: ((m: ConmonMessage | undefined) => void) | undefined;
  private ended = false;

  constructor(pipe: Readable) {
    pipe.on('data', (chunk: Buffer) => {
      this.buffer += chunk.toString('utf8');
      let nl: number;
      while ((nl = this.buffer.indexOf('\n')) >= 0) {
        const line = this.buffer.slice(0, nl).trim();
        this.buffer = this.buffer.slice(nl + 1);
        if (line) this.deliver(parseConmonMessage(line));
      }
    });
    const end = (): void => {
      if (this.ended) return;
      this.ended = true;
      if (this.buffer.trim()) this.deliver(parseConmonMessage(this.buffer.trim()));
      this.buffer = '';
      this.waiting?.(undefined);
      this.waiting = undefined;
    };
    pipe.on('end', end);
    pipe.on('close', end);
    pipe.on('error', end);
  }

  private deliver(message: ConmonMessage): void {
    if (this.waiting) {
      const w = this.waiting;
      this.waiting = undefined;
      w(message);
    } else {
      this.queue.push(message);
    }
  }

  /** The next message; undefined once conmon closed the pipe. */
  next(): Promise<ConmonMessage | undefined> {
    const queued = this.queue.shift();
    if (queued) return Promise.resolve(queued);
    if (this.ended) return Promise.resolve(undefined);
    return new Promise((resolve) => {
      this.waiting = resolve;
    });
  }
}

/** conmon's message on a line; a line that is none is a failure (-1) saying so. */
export function parseConmonMessage(line: string): ConmonMessage {
  try {
    const { value, message } = readConmonMessage(line);
    return message === undefined ? { data: value } : { data: value, message };
  } catch (err) {
    if (!(err instanceof ConmonMessageError)) throw err;
    return { data: -1, message: err.message };
  }
}

export interface ExecConmon {
  child: ChildProcess;
  /** The pid of the exec'd process, then its exit code. */
  messages: MessagePipe;
  /** One message once the attach socket is listening. */
  attachReady: MessagePipe;
  /** conmon reads one byte to go on, and its runtime child a second one to run the command. */
  start: Writable;
  stderr: () => string;
  exited: Promise<void>;
}

/** Starts conmon for an attached exec (`--sync`: it stays our child and exits with the command). */
export function spawnExecConmon(o: ExecConmonOptions): ExecConmon {
  const env = conmonEnvironment({ sync: SYNC_FD, start: START_FD, attach: ATTACH_FD });
  const child = spawn(o.conmonPath, execConmonArgs(o), { stdio: ['ignore', 'pipe', 'pipe', 'pipe', 'pipe', 'pipe'], env, cwd: o.dir });
  let stderr = '';
  child.stdout?.on('data', () => undefined);
  child.stderr?.on('data', (c: Buffer) => {
    stderr += c.toString('utf8');
  });
  const start = child.stdio[START_FD] as Writable;
  start.on('error', () => undefined);
  const exited = new Promise<void>((resolve) => {
    child.once('error', () => resolve());
    child.once('close', () => resolve());
  });
  return {
    child,
    messages: new MessagePipe(child.stdio[SYNC_FD] as Readable),
    attachReady: new MessagePipe((child.stdio as unknown as Readable[])[ATTACH_FD]!),
    start,
    stderr: () => stderr.trim(),
    exited,
  };
}
