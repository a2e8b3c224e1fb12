import { errorMessage } from '@skiff/common';
import type { RuntimeContext } from '../daemon/context.js';
import { ExitNotifier } from '../process/exit-notifier.js';
import { pauseProcessRunning } from '../sandbox/sandbox-state.js';
import type { SandboxRecord } from '../state/records.js';

/**
 * How often the set of pause processes followed is brought up to date with the ready pods, and
 * each is looked at directly (in case the pidfd helper cannot run).
 */
const INTERVAL_MS = 1000;

/**
 * Streams a CONTAINER_STOPPED_EVENT for a pod sandbox whose pause process died on its own (the
 * OOM killer, a kill from outside): the sandbox turns NOTREADY without any call of the kubelet's,
 * and the evented PLEG must hear of it. A pidfd per pause process tells of its death at once;
 * a look at each every second is the fallback. Each such death is reported once.
 */
export function watchPauseProcesses(ctx: RuntimeContext): { close(): void } {
  const reported = new Set<string>();
  let lastWarning = 0;

  const check = async (rec: SandboxRecord): Promise<void> => {
    // A sandbox under a call (a stop kills its pause process) reports its own events; a pod
    // without a pause has none to die.
    if (rec.pauseless) return;
    if (rec.phase !== 'ready' || reported.has(rec.id) || ctx.locks.isHeld(rec.id) || (await pauseProcessRunning(rec))) return;
    if (rec.phase !== 'ready' || reported.has(rec.id) || ctx.locks.isHeld(rec.id)) return;
    reported.add(rec.id);
    ctx.log.warn({ sandbox: rec.id, pid: rec.pid }, 'the pause process of a ready pod sandbox died; the sandbox is NOTREADY');
    ctx.events.sandbox({ ...rec, phase: 'stopped' }, 'CONTAINER_STOPPED_EVENT');
  };
  const failed = (err: unknown): void => ctx.log.warn({ err: errorMessage(err) }, 'checking pause processes failed');

  const notifier = new ExitNotifier(
    (id) => {
      const rec = ctx.state.sandboxes.get(id);
      if (rec) check(rec).catch(failed);
    },
    (message) => {
      // A helper that cannot run at all would fail on every tick.
      if (Date.now() - lastWarning < 60_000) return;
      lastWarning = Date.now();
      ctx.log.warn({ err: message }, 'pause processes are looked at every second only until the pidfd helper runs');
    },
  );

  const tick = async (): Promise<void> => {
    for (const id of reported) if (!ctx.state.sandboxes.has(id)) reported.delete(id);
    const wanted = new Map<string, { pid: number; startTime: number }>();
    for (const rec of ctx.state.sandboxes.values()) {
      if (rec.phase === 'ready' && !reported.has(rec.id) && rec.pid !== undefined && rec.pidStartTime !== undefined) {
        wanted.set(rec.id, { pid: rec.pid, startTime: rec.pidStartTime });
      }
    }
    notifier.sync(wanted);
    for (const rec of ctx.state.sandboxes.values()) await check(rec);
  };
  void tick().catch(failed);
  const timer = setInterval(() => void tick().catch(failed), INTERVAL_MS);
  timer.unref();
  return {
    close: () => {
      clearInterval(timer);
      notifier.close();
    },
  };
}
