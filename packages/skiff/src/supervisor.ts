import { spawn, type ChildProcess } from 'node:child_process';
import { createInterface } from 'node:readline';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Writable } from 'node:stream';
import { isProcessAlive, pollUntil, readPidFile, removePidFile, writePidFile, type Logger } from '@skiff/common/core';
import { RestartBackoff } from './backoff.js';
import type { ServiceSpec } from './services.js';

const STOP_GRACE_MS = 10_000;

interface Running {
  spec: ServiceSpec;
  child?: ChildProcess;
  startedAt: number;
  backoff: RestartBackoff;
  restartTimer?: NodeJS.Timeout;
  exited?: Promise<void>;
}

export function servicePidFile(runDir: string, name: string): string {
  return join(runDir, `${name}.pid`);
}

export function commandLineOf(pid: number): string {
  try {
    return readFileSync(`/proc/${pid}/cmdline`, 'utf8').replaceAll('\0', ' ');
  } catch {
    return '';
  }
}

async function waitForExit(pid: number, timeoutMs: number): Promise<boolean> {
  return (await pollUntil(async () => (isProcessAlive(pid) ? undefined : true), timeoutMs, 50)) === true;
}

/**
 * Runs each service as its own process, passes its log lines to `output`, and restarts it with backoff
 * when it dies. Services get a stdin pipe: when the supervisor dies, the pipe closes and they exit.
 */
export class Supervisor {
  private readonly running = new Map<string, Running>();
  private stopping = false;

  constructor(
    private readonly services: readonly ServiceSpec[],
    private readonly configPath: string | undefined,
    private readonly runDir: string,
    private readonly output: Writable,
    private readonly log: Logger,
    /** Told of each restart after a service died. */
    private readonly onRestart: (service: string) => void = () => undefined,
  ) {}

  async start(): Promise<void> {
    for (const spec of this.services) {
      await this.endLeftover(spec);
      const entry: Running = { spec, startedAt: 0, backoff: new RestartBackoff() };
      this.running.set(spec.name, entry);
      this.launch(entry);
    }
  }

  /** A service left running by a supervisor that was killed is ended, but only if it is really ours. */
  private async endLeftover(spec: ServiceSpec): Promise<void> {
    const pidFile = servicePidFile(this.runDir, spec.name);
    const pid = await readPidFile(pidFile);
    if (pid === undefined || !isProcessAlive(pid) || !commandLineOf(pid).includes(spec.entry)) return;
    this.log.warn({ service: spec.name, pid }, 'stopping a service left running by an earlier supervisor');
    process.kill(pid, 'SIGTERM');
    if (!(await waitForExit(pid, STOP_GRACE_MS))) process.kill(pid, 'SIGKILL');
    await waitForExit(pid, 2000);
  }

  private launch(entry: Running): void {
    const { spec } = entry;
    const args = [...(spec.nodeOptions ?? []), ...(this.configPath === undefined ? [spec.entry] : [spec.entry, '--config', this.configPath])];
    // A session of its own: the service leads a process group, so after a crash its successor can
    // find the children it left behind (runtime-svc's recovery waits for them).
    const child = spawn(process.execPath, args, {
      detached: true,
      stdio: ['pipe', 'pipe', 'pipe'],
      env: { ...process.env, SKIFF_SUPERVISED: '1' },
    });
    entry.child = child;
    entry.startedAt = performance.now();
    this.log.info({ service: spec.name, pid: child.pid }, 'service started');
    if (child.pid !== undefined) void writePidFile(servicePidFile(this.runDir, spec.name), child.pid).catch(() => undefined);
    for (const stream of [child.stdout, child.stderr]) {
      if (!stream) continue;
      createInterface({ input: stream, crlfDelay: Infinity }).on('line', (line) => this.output.write(`${line}\n`));
    }
    entry.exited = new Promise((resolve) => {
      child.once('exit', (code, signal) => {
        entry.child = undefined;
        resolve();
        if (this.stopping) return;
        const ranMs = performance.now() - entry.startedAt;
        const delay = entry.backoff.next(ranMs);
        this.log.error({ service: spec.name, code, signal, ranMs, restartInMs: delay }, 'service exited; restarting');
        this.onRestart(spec.name);
        entry.restartTimer = setTimeout(() => this.launch(entry), delay);
      });
    });
    child.once('error', (err) => this.log.error({ service: spec.name, err: err.message }, 'cannot start service'));
  }

  async stop(): Promise<void> {
    this.stopping = true;
    await Promise.all(
      [...this.running.values()].map(async (entry) => {
        if (entry.restartTimer) clearTimeout(entry.restartTimer);
        const child = entry.child;
        if (child?.pid !== undefined) {
          child.kill('SIGTERM');
          const killTimer = setTimeout(() => child.kill('SIGKILL'), STOP_GRACE_MS);
          await entry.exited;
          clearTimeout(killTimer);
        }
        await removePidFile(servicePidFile(this.runDir, entry.spec.name));
      }),
    );
  }

  pids(): Record<string, number | undefined> {
    return Object.fromEntries([...this.running.values()].map((e) => [e.spec.name, e.child?.pid]));
  }
}
