import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import type { cri } from '@skiff/proto';
import { inUnitContext } from '../daemon/unit-context.js';
import { watchPauseProcesses } from './pause-watcher.js';

describe('the pause-process watcher', () => {
  it('streams the death of a pause process, and none for a pod without a pause, which has no process to die', async () => {
    await inUnitContext(async (u) => {
      // Looked at in this order: once the second one's event is out, the first was looked at.
      const pauseless = await u.addSandbox('ready', { pauseless: true, pid: undefined });
      const pauseGone = await u.addSandbox('ready', { pid: 0x7fffffff });
      const events: cri.ContainerEventResponse[] = [];
      let seen: () => void = () => undefined;
      const gone = new Promise<void>((resolve) => (seen = resolve));
      const subscription = u.ctx.events.bus.subscribe({
        deliver: (event) => {
          events.push(event);
          if (event.container_id === pauseGone.id) seen();
          return true;
        },
        overflowed: () => undefined,
      });
      const watcher = watchPauseProcesses(u.ctx);
      try {
        await gone;
        assert.deepEqual(
          events.map((e) => [e.container_id, e.container_event_type]),
          [[pauseGone.id, 'CONTAINER_STOPPED_EVENT']],
        );
        assert.ok(!events.some((e) => e.container_id === pauseless.id), 'nothing for the pod without a pause');
      } finally {
        watcher.close();
        subscription.unsubscribe();
      }
    });
  });
});
