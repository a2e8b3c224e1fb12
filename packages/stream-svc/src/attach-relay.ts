import { spawn, type ChildProcess } from 'node:child_process';
import { constants, promises as fs } from 'node:fs';
import { basename, dirname } from 'node:path';
import type { Readable } from 'node:stream';
import { fileURLToPath } from 'node:url';
import { FRAME_CONNECTED, FrameReader, resizeMessage } from './attach-frames.js';
import type { TerminalSize } from './session.js';

/** The relay program, shipped with this package (`relay/attach-relay.py`). */
export const ATTACH_RELAY_PATH = fileURLToPath(new URL('../relay/attach-relay.py', import.meta.url));
export const PYTHON_PATH = '/usr/bin/python3';

export interface RelayHandlers {
  /** A packet from conmon: type 2 stdout, 3 stderr. */
  onPacket(type: number, data: Buffer): void;
}

/**
 * One connection to a conmon attach socket, through the relay program (Node cannot open a
 * SOCK_SEQPACKET socket). `connected` resolves once the relay is connected and rejects with the
 * relay's error if it cannot connect; `ended` resolves when the socket (or the relay) is done.
 */
export class AttachRelay {
  readonly connected: Promise<void>;
  readonly ended: Promise<void>;
  private readonly child: ChildProcess;

  constructor(socketPath: string, handlers: RelayHandlers) {
    this.child = spawn(PYTHON_PATH, [ATTACH_RELAY_PATH, dirname(socketPath), basename(socketPath)], { stdio: ['pipe', 'pipe', 'pipe'] });
    const reader = new FrameReader();
    let errors = '';
    let onConnected: () => void = () => undefined;
    let onFailed: (err: Error) => void = () => undefined;
    this.connected = new Promise<void>((resolve, reject) => {
      onConnected = resolve;
      onFailed = reject;
    });
    this.connected.catch(() => undefined);
    this.child.stdin?.on('error', () => undefined);
    this.child.stderr?.on('data', (chunk: Buffer) => {
      errors += chunk.toString('utf8');
    });
    this.child.stdout?.on('data', (chunk: Buffer) => {
      for (const frame of reader.push(chunk)) {
        if (frame.type === FRAME_CONNECTED) onConnected();
        else handlers.onPacket(frame.type, frame.data);
      }
    });
    this.ended = new Promise<void>((resolve) => {
      this.child.once('error', (err) => {
        onFailed(new Error(`cannot run ${PYTHON_PATH} ${ATTACH_RELAY_PATH}: ${err.message}`));
        resolve();
      });
      // 'close' comes after stdout has been read to its end: every frame has been handled.
      this.child.once('close', (code, signal) => {
        onFailed(new Error(errors.trim() || `attach relay ended (${signal ?? `exit ${code}`}) before connecting`));
        resolve();
      });
    });
  }

  /** conmon's output as the relay passes it on; paused, conmon's writes to the socket wait. */
  get output(): Readable | null {
    return this.child.stdout;
  }

  get pid(): number | undefined {
    return this.child.pid;
  }

  writeStdin(chunk: Buffer): void {
    const stdin = this.child.stdin;
    if (stdin && !stdin.destroyed && !stdin.writableEnded) stdin.write(chunk);
  }

  /** conmon sees the socket's write side shut: with stdin_once it closes the process's stdin. */
  endStdin(): void {
    const stdin = this.child.stdin;
    if (stdin && !stdin.destroyed && !stdin.writableEnded) stdin.end();
  }

  /** Drops the connection at once; the container's conmon goes on. */
  close(): void {
    if (this.child.exitCode === null && this.child.signalCode === null) this.child.kill('SIGKILL');
  }
}

/**
 * Sends a terminal size to conmon's control fifo. Opened non-blocking so a conmon that is gone
 * (no reader) fails with ENXIO instead of hanging.
 */
export async function sendResize(ctlFile: string, size: TerminalSize): Promise<void> {
  const handle = await fs.open(ctlFile, constants.O_WRONLY | constants.O_NONBLOCK);
  try {
    await handle.write(resizeMessage(size));
  } finally {
    await handle.close();
  }
}
