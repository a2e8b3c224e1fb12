// CRI RuntimeService.UpdateContainerResources
import { promises as fs } from 'node:fs';
import { atomicWriteJson } from '@skiff/common';
import type { cri } from '@skiff/proto';
import { resourcesOf } from '../container/container-spec.js';
import { refreshContainer } from '../container/container-state.js';
import { requireContainer, withContainerLock } from '../container/require-container.js';
import type { RuntimeContext } from '../daemon/context.js';
import { resourceLimits } from '../oci/spec-builder.js';
import type { LinuxResources, Spec } from '../oci/runtime-spec.js';
import { nriLinuxResources } from '../nri/nri-messages.js';

/**
 * Applies new cgroup limits to a running container with `runc update`, or to the config.json of a
 * created one (runc makes its cgroup at StartContainer), and keeps them as the container's reported
 * resources. An exited container, or one in a runsc sandbox, just records them.
 */
export async function updateContainerResourcesCall(ctx: RuntimeContext, request: cri.UpdateContainerResourcesRequest__Output): Promise<cri.UpdateContainerResourcesResponse> {
  const rec = requireContainer(ctx, 'UpdateContainerResources', request.container_id);
  await withContainerLock(ctx, rec, async () => {
    await refreshContainer(ctx, rec);
    const wanted = request.linux;
    if (!wanted) return;
    const limits = resourceLimits(resourcesOf(wanted) ?? {}, ctx.facts);
    const sandbox = ctx.state.sandboxes.get(rec.sandboxId);
    if (sandbox && ctx.nri?.active) await ctx.nri.notifyContainer('UpdateContainer', sandbox, rec, nriLinuxResources(limits));
    const handler = ctx.handlers.forExisting(rec.runtimeHandler);
    // A sandbox-kind runtime (runsc) keeps no per-container limits: the pod's cgroup, which the
    // kubelet resizes itself, bounds the whole sandbox.
    if (handler.kind === 'oci') {
      if (rec.phase === 'created' && rec.pid === undefined) await updateSpecResources(ctx.paths.container(rec.id).spec, limits);
      else if (rec.phase === 'created' || rec.phase === 'running') await handler.runc.update(rec.id, limits);
    }
    rec.resources = wanted;
    await ctx.records.saveContainer(rec);
    ctx.log.info({ container: rec.id, limits }, 'container resources updated');
    if (sandbox && ctx.nri?.active) await ctx.nri.notifyContainer('PostUpdateContainer', sandbox, rec);
  });
  return {};
}

/** As `runc update` does: the limits given replace those of the same kind, the others (device rules too) stay. */
async function updateSpecResources(specPath: string, limits: Omit<LinuxResources, 'devices'>): Promise<void> {
  const spec = JSON.parse(await fs.readFile(specPath, 'utf8')) as Spec;
  spec.linux.resources = { ...spec.linux.resources, ...limits };
  await atomicWriteJson(specPath, spec);
}
