import { watch, type FSWatcher } from 'node:fs';
import { errorMessage } from '@skiff/common';
import { refreshContainer } from '../container/container-state.js';
import type { RuntimeContext } from '../daemon/context.js';

/**
 * Records a container's exit as soon as conmon writes its exit file (inotify on the exit
 * directory), so that the exit is in ContainerStatus and on the event stream within moments of
 * the process's death, whatever ended it, instead of at the next call that looks.
 */
export function watchContainerExits(ctx: RuntimeContext): FSWatcher {
  const watcher = watch(ctx.paths.exitDir, (_event, name) => {
    if (!name) return;
    ctx.exitWatch.exitFileAppeared(name.toString());
    const rec = ctx.state.containers.get(name.toString());
    if (!rec || (rec.phase !== 'created' && rec.phase !== 'running')) return;
    ctx.exitWatch.exitSeen(rec.id);
    refreshContainer(ctx, rec).catch((err: unknown) => ctx.log.warn({ container: rec.id, err: errorMessage(err) }, 'recording an exit failed; the next status call retries'));
  });
  ctx.exitWatch.watching = true;
  watcher.on('error', (err) => {
    ctx.exitWatch.watching = false;
    ctx.log.error({ err: errorMessage(err) }, 'watching exit files failed; exits are seen at the next call');
  });
  watcher.unref();
  return watcher;
}
