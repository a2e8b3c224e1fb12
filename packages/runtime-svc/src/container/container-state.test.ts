import assert from 'node:assert/strict';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import type { cri } from '@skiff/proto';
import type { RuntimeContext } from '../daemon/context.js';
import { RuntimePaths } from '../daemon/paths.js';
import { ContainerEvents } from '../events/container-events.js';
import { containerRecordFixture } from '../state/record-fixtures.js';
import { StateIndex } from '../state/state-index.js';
import { refreshContainer } from './container-state.js';

test('an exit recorded while the container is being removed is never streamed after its deletion', async (t) => {
  const dir = await mkdtemp(join(tmpdir(), 'container-state-'));
  t.after(() => rm(dir, { recursive: true, force: true }));
  const paths = new RuntimePaths(join(dir, 'root'), join(dir, 'run'));
  const rec = containerRecordFixture('c'.repeat(64), 's'.repeat(64), 'running');
  await mkdir(paths.exitDir, { recursive: true });
  await writeFile(join(paths.exitDir, rec.id), '3');

  const state = new StateIndex();
  state.containers.set(rec.id, rec);
  const events = new ContainerEvents(state, 100);
  const seen: string[] = [];
  events.bus.subscribe({ deliver: (e: cri.ContainerEventResponse) => (seen.push(String(e.container_event_type)), true), overflowed: () => undefined });
  // The record's write is held until the removal below has been streamed.
  let releaseSave!: () => void;
  const saveHeld = new Promise<void>((resolve) => (releaseSave = resolve));
  let saving!: () => void;
  const saveStarted = new Promise<void>((resolve) => (saving = resolve));
  const ctx = {
    paths,
    state,
    events,
    journald: false,
    handlers: { forExisting: () => ({ kind: 'oci' }) },
    records: { saveContainer: async () => (saving(), await saveHeld) },
    exitWatch: { exitRecorded: () => undefined },
  } as unknown as RuntimeContext;

  const refreshed = refreshContainer(ctx, rec);
  await saveStarted;
  // What RemoveContainer does meanwhile under the container's lock: its own refresh finds the exit
  // recorded in memory, then the record is marked removing and the deletion streamed.
  await refreshContainer(ctx, rec);
  rec.phase = 'removing';
  events.container(rec, 'CONTAINER_DELETED_EVENT');
  releaseSave();
  await refreshed;

  assert.deepEqual(seen, ['CONTAINER_STOPPED_EVENT', 'CONTAINER_DELETED_EVENT']);
});
