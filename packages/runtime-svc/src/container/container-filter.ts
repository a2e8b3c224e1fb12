import { isProcessAlive } from '@skiff/common';
import type { cri } from '@skiff/proto';
import { idsWithExitFiles } from '../conmon/exit-file.js';
import type { RuntimeContext } from '../daemon/context.js';
import { compareCreationTimes } from '../listing/creation-order.js';
import { matchesLabels } from '../listing/label-selector.js';
import type { ContainerRecord } from '../state/records.js';
import { refreshContainer } from './container-state.js';
import { containerState } from './container-view.js';

export interface ContainerFilterFields {
  id?: string;
  pod_sandbox_id?: string;
  label_selector?: Record<string, string>;
  state?: cri.ContainerStateValue__Output | null;
}

/**
 * Whether a created or running container may have exited: conmon has written its exit file, or
 * its process is gone. One directory read per listing instead of two file reads per container,
 * and a cheap process probe; containers in any other phase are left alone (refreshing them
 * changes nothing).
 */
async function exitCandidates(ctx: RuntimeContext): Promise<(rec: ContainerRecord) => boolean> {
  const exitFiles = await idsWithExitFiles(ctx.paths.exitDir);
  return (rec) =>
    (rec.phase === 'created' || rec.phase === 'running') &&
    // A created container has no process before StartContainer: only an exit file would say anything.
    (exitFiles.has(rec.id) || (rec.pid === undefined ? rec.phase === 'running' : !isProcessAlive(rec.pid)));
}

/** Containers matching a filter (id and sandbox id exact or prefix, state, labels), oldest first, refreshed. */
export async function filterContainers(ctx: RuntimeContext, filter: ContainerFilterFields | null): Promise<ContainerRecord[]> {
  const matching: ContainerRecord[] = [];
  const mayHaveExited = await exitCandidates(ctx);
  for (const rec of ctx.state.containers.values()) {
    if (filter?.id && !rec.id.startsWith(filter.id)) continue;
    if (filter?.pod_sandbox_id && !rec.sandboxId.startsWith(filter.pod_sandbox_id)) continue;
    if (!matchesLabels(rec.labels, filter?.label_selector)) continue;
    matching.push(rec);
  }
  // At once: recording an exit waits for the container's last log lines, and many may have exited together.
  await Promise.all(matching.filter(mayHaveExited).map((rec) => refreshContainer(ctx, rec)));
  const wanted = filter?.state;
  const out = wanted ? matching.filter((rec) => containerState(rec) === wanted.state) : matching;
  return out.sort((a, b) => compareCreationTimes(a.createdAt, b.createdAt));
}
