import type { nri } from '@skiff/proto';
import type { RuntimeContext } from '../daemon/context.js';
import type { NriContainerControl } from '../nri/nri-runtime.js';
import { updatedCriResources } from '../nri/resource-update.js';
import { stopContainerLocked } from './container-stop-locked.js';
import { requireContainer, withContainerLock } from './require-container.js';
import { updateResourcesLocked } from './update-resources-locked.js';

/** An eviction stops the container at once, as a StopContainer with no grace period would (NRI plugins hear of the stop as its exit is recorded). */
const EVICTION_TIMEOUT_SECONDS = 0;

/** The container updates and evictions NRI plugins ask for, carried out as the CRI calls do them. */
export function nriContainerControl(ctx: RuntimeContext): NriContainerControl {
  return {
    async update(containerId: string, resources: nri.LinuxResources__Output, plugin: string): Promise<void> {
      const rec = requireContainer(ctx, `NRI plugin "${plugin}"'s update`, containerId);
      await withContainerLock(ctx, rec, () => updateResourcesLocked(ctx, rec, updatedCriResources(rec.resources, resources), plugin));
    },
    async evict(containerId: string, reason: string, plugin: string): Promise<void> {
      const rec = requireContainer(ctx, `NRI plugin "${plugin}"'s eviction`, containerId);
      ctx.log.warn({ container: rec.id, plugin, reason }, 'NRI plugin evicts a container; stopping it');
      await withContainerLock(ctx, rec, () => stopContainerLocked(ctx, rec, EVICTION_TIMEOUT_SECONDS));
    },
  };
}
