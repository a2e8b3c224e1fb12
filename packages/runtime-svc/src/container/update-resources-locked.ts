import { promises as fs } from 'node:fs';
import { atomicWriteJson } from '@skiff/common';
import type { cri } from '@skiff/proto';
import type { RuntimeContext } from '../daemon/context.js';
import { nriLinuxResources } from '../nri/nri-messages.js';
import { resourceLimits } from '../oci/spec-builder.js';
import type { LinuxResources, Spec } from '../oci/runtime-spec.js';
import type { ContainerRecord } from '../state/records.js';
import { resourcesOf } from './container-spec.js';
import { refreshContainer } from './container-state.js';

/**
 * Applies new cgroup limits to a running container with `runc update`, or to the config.json of a
 * created one (runc makes its cgroup at StartContainer), and keeps them as the container's reported
 * resources (the caller holds its lock). An exited container, or one in a runsc sandbox, just
 * records them. The NRI UpdateContainer and PostUpdateContainer events go to every subscribed
 * plugin but `nriPluginAsking`, the one whose request this update is.
 */
export async function updateResourcesLocked(ctx: RuntimeContext, rec: ContainerRecord, wanted: cri.LinuxContainerResources__Output, nriPluginAsking?: string): Promise<void> {
  await refreshContainer(ctx, rec);
  const limits = resourceLimits(resourcesOf(wanted) ?? {}, ctx.facts);
  const sandbox = ctx.state.sandboxes.get(rec.sandboxId);
  if (sandbox && ctx.nri?.active) await ctx.nri.notifyContainer('UpdateContainer', sandbox, rec, nriLinuxResources(limits), nriPluginAsking);
  const handler = ctx.handlers.forExisting(rec.runtimeHandler);
  // A sandbox-kind runtime (runsc) keeps no per-container limits: the pod's cgroup, which the
  // kubelet resizes itself, bounds the whole sandbox.
  if (handler.kind === 'oci') {
    if (rec.phase === 'created' && rec.pid === undefined) await updateSpecResources(ctx.paths.container(rec.id).spec, limits);
    else if (rec.phase === 'created' || rec.phase === 'running') await handler.runc.update(rec.id, limits);
  }
  rec.resources = wanted;
  await ctx.records.saveContainer(rec);
  ctx.log.info({ container: rec.id, limits, ...(nriPluginAsking ? { nriPlugin: nriPluginAsking } : {}) }, 'container resources updated');
  if (sandbox && ctx.nri?.active) await ctx.nri.notifyContainer('PostUpdateContainer', sandbox, rec, undefined, nriPluginAsking);
}

/** As `runc update` does: the limits given replace those of the same kind, the others (device rules too) stay. */
async function updateSpecResources(specPath: string, limits: Omit<LinuxResources, 'devices'>): Promise<void> {
  const spec = JSON.parse(await fs.readFile(specPath, 'utf8')) as Spec;
  spec.linux.resources = { ...spec.linux.resources, ...limits };
  await atomicWriteJson(specPath, spec);
}
