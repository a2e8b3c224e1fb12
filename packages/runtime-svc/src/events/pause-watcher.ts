import { errorMessage } from '@skiff/common';
import type { RuntimeContext } from '../daemon/context.js';
import { pauseProcessRunning } from '../sandbox/sandbox-state.js';

/** How often the pause processes of ready pods are looked at; a death on its own is rare. */
const INTERVAL_MS = 1000;

/**
 * Streams a CONTAINER_STOPPED_EVENT for a pod sandbox whose pause process died on its own (the
 * OOM killer, a kill from outside): the sandbox turns NOTREADY without any call of the kubelet's,
 * and the evented PLEG must hear of it. Each such death is reported once.
 */
export function watchPauseProcesses(ctx: RuntimeContext): NodeJS.Timeout {
  const reported = new Set<string>();
  const timer = setInterval(() => {
    void (async () => {
      for (const id of reported) if (!ctx.state.sandboxes.has(id)) reported.delete(id);
      for (const rec of ctx.state.sandboxes.values()) {
        // A sandbox under a call (a stop kills its pause process) reports its own events.
        if (rec.phase !== 'ready' || reported.has(rec.id) || ctx.locks.isHeld(rec.id) || (await pauseProcessRunning(rec))) continue;
        if (rec.phase !== 'ready' || ctx.locks.isHeld(rec.id)) continue;
        reported.add(rec.id);
        ctx.log.warn({ sandbox: rec.id, pid: rec.pid }, 'the pause process of a ready pod sandbox died; the sandbox is NOTREADY');
        ctx.events.sandbox({ ...rec, phase: 'stopped' }, 'CONTAINER_STOPPED_EVENT');
      }
    })().catch((err: unknown) => ctx.log.warn({ err: errorMessage(err) }, 'checking pause processes failed'));
  }, INTERVAL_MS);
  timer.unref();
  return timer;
}
