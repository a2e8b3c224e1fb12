import { promises as fs } from 'node:fs';
import { isProcessAlive } from '@skiff/common';
import { containerListEncoder, type cri } from '@skiff/proto';
import { idsWithExitFiles } from '../conmon/exit-file.js';
import { refreshContainer } from '../container/container-state.js';
import { containerState, criContainerContent, toCriContainer, toCriContainerStatus } from '../container/container-view.js';
import { requireContainer } from '../container/require-container.js';
import type { RuntimeContext } from '../daemon/context.js';
import type { ContainerRecord } from '../state/records.js';
import { compareCreationTimes } from '../listing/creation-order.js';
import { matchesLabels } from '../listing/label-selector.js';
import { ListEntryCache } from '../listing/list-entry-cache.js';

async function verboseInfo(ctx: RuntimeContext, rec: ContainerRecord): Promise<Record<string, string>> {
  const paths = ctx.paths.container(rec.id);
  const spec = await fs.readFile(paths.spec, 'utf8').then((t) => JSON.parse(t) as unknown).catch(() => null);
  return {
    info: JSON.stringify({
      sandboxID: rec.sandboxId,
      pid: rec.phase === 'running' || rec.phase === 'created' ? (rec.pid ?? 0) : 0,
      conmonPid: rec.conmonPid ?? 0,
      name: rec.fullName,
      runtimeHandler: rec.runtimeHandler,
      bundle: paths.bundle,
      rootfs: paths.rootfs,
      cgroupsPath: rec.cgroupsPath,
      image: rec.image,
      runtimeSpec: spec,
    }),
  };
}

export async function containerStatus(ctx: RuntimeContext, request: cri.ContainerStatusRequest__Output): Promise<cri.ContainerStatusResponse> {
  const rec = await refreshContainer(ctx, requireContainer(ctx, 'ContainerStatus', request.container_id));
  const response: cri.ContainerStatusResponse = { status: toCriContainerStatus(rec) };
  if (request.verbose) response.info = await verboseInfo(ctx, rec);
  return response;
}

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
    (rec.phase === 'created' || rec.phase === 'running') && (exitFiles.has(rec.id) || rec.pid === undefined || !isProcessAlive(rec.pid));
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

/** The entries listings return, encoded once per content (see ListEntryCache). */
const listEntries = new ListEntryCache<ContainerRecord, cri.Container>(containerListEncoder.seal);

export async function listContainers(ctx: RuntimeContext, request: cri.ListContainersRequest__Output): Promise<cri.ListContainersResponse> {
  const recs = await filterContainers(ctx, request.filter);
  return { containers: recs.map((rec) => listEntries.entryFor(rec, criContainerContent(rec), () => toCriContainer(rec))) };
}
