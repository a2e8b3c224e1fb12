import { spawn, type ChildProcess } from 'node:child_process';
import type { Readable, Writable } from 'node:stream';

/**
 * conmon talks to its parent over inherited descriptors named in its environment: _OCI_SYNCPIPE
 * (conmon writes one JSON object per line: the container pid after `runtime create`, or the exit
 * code after an `--exec`, with "message" holding runtime stderr on failure) and, when given,
 * _OCI_STARTPIPE (conmon blocks until one byte arrives). spawnConmon hands them over as the
 * child's fds 3 and 4; a container's conmon gets the sync pipe alone (see conmon.ts).
 */
export const SYNC_PIPE_FD = 3;
export const START_PIPE_FD = 4;
export const SYNC_PIPE_ENV = '_OCI_SYNCPIPE';

export interface SyncMessage {
  /** "pid" for create, "exit_code" for exec (conmon API version 0), "data" for API version 1. */
  value: number;
  message?: string;
}

export interface SpawnedConmon {
  child: ChildProcess;
  syncPipe: Readable;
  startPipe: Writable;
  stdout: Buffer[];
  stderr: Buffer[];
  /** Resolves with conmon's exit code (the first process: it exits as soon as it has forked, unless --sync). */
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
}

/** Variables that would make conmon or runc think they were socket-activated or notify-managed. */
const STRIPPED_ENV = ['NOTIFY_SOCKET', 'LISTEN_PID', 'LISTEN_FDS', 'LISTEN_FDNAMES'];

/** This process's environment for conmon, without what would make it or runc think they were socket-activated. */
export function conmonEnvironment(): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { ...process.env };
  for (const key of STRIPPED_ENV) delete env[key];
  return env;
}

export function spawnConmon(conmonPath: string, args: readonly string[], cwd?: string): SpawnedConmon {
  const env = conmonEnvironment();
  env[SYNC_PIPE_ENV] = String(SYNC_PIPE_FD);
  env['_OCI_STARTPIPE'] = String(START_PIPE_FD);
  const child = spawn(conmonPath, args, { stdio: ['ignore', 'pipe', 'pipe', 'pipe', 'pipe'], env, cwd });
  const stdout: Buffer[] = [];
  const stderr: Buffer[] = [];
  child.stdout?.on('data', (c: Buffer) => stdout.push(c));
  child.stderr?.on('data', (c: Buffer) => stderr.push(c));
  const syncPipe = child.stdio[SYNC_PIPE_FD] as Readable;
  const startPipe = child.stdio[START_PIPE_FD] as Writable;
  startPipe.on('error', () => undefined); // conmon may die before reading it
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve, reject) => {
    child.on('error', (err) => reject(new Error(`cannot run ${conmonPath}: ${err.message}`)));
    child.on('exit', (code, signal) => resolve({ code, signal }));
  });
  return { child, syncPipe, startPipe, stdout, stderr, exited };
}

/** Lets conmon go on: it has been waiting for this byte before forking anything. */
export function releaseConmon(conmon: SpawnedConmon): void {
  conmon.startPipe.end(Buffer.from([0]));
}

/**
 * Reads the first JSON line conmon writes on the sync pipe. Resolves undefined when conmon
 * closed the pipe without writing (it died, or failed before reaching the runtime).
 */
export function readSyncMessage(pipe: Readable, timeoutMs: number): Promise<SyncMessage | undefined> {
  return new Promise((resolve, reject) => {
    let buffer = '';
    const cleanup = (): void => {
      clearTimeout(timer);
      pipe.off('data', onData);
      pipe.off('end', onEnd);
      pipe.off('close', onEnd);
      pipe.off('error', onError);
    };
    const onData = (chunk: Buffer): void => {
      buffer += chunk.toString('utf8');
      const nl = buffer.indexOf('\n');
      if (nl < 0) return;
      cleanup();
      try {
        resolve(parseSyncMessage(buffer.slice(0, nl)));
      } catch (err) {
        reject(err);
      }
    };
    const onEnd = (): void => {
      cleanup();
      if (buffer.trim()) {
        try {
          resolve(parseSyncMessage(buffer));
        } catch (err) {
          reject(err);
        }
      } else {
        resolve(undefined);
      }
    };
    const onError = (err: Error): void => {
      cleanup();
      reject(err);
    };
    const timer = setTimeout(() => {
      cleanup();
      reject(new Error(`conmon sent nothing on its sync pipe within ${timeoutMs} ms`));
    }, timeoutMs);
    pipe.on('data', onData);
    pipe.on('end', onEnd);
    pipe.on('close', onEnd);
    pipe.on('error', onError);
  });
}

export function parseSyncMessage(line: string): SyncMessage {
  let parsed: Record<string, unknown>;
  try {
    parsed = JSON.parse(line) as Record<string, unknown>;
  } catch {
    throw new Error(`conmon wrote an unreadable sync message: ${line.slice(0, 200)}`);
  }
  const raw = parsed['data'] ?? parsed['pid'] ?? parsed['exit_code'];
  if (typeof raw !== 'number') throw new Error(`conmon sync message has no pid or exit code: ${line.slice(0, 200)}`);
  const out: SyncMessage = { value: raw };
  if (typeof parsed['message'] === 'string') out.message = parsed['message'];
  return out;
}
