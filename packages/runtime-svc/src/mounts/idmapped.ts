import { mountFlagsAndData } from '@skiff/common';
import type { IdMapping, Mount } from '../oci/runtime-spec.js';
import type { OverlayMount } from './mounts.js';
import { runNativeHelper } from './native-helpers.js';

/** A pod's user namespace mappings (one uid and one gid range). */
export interface PodIdMappings {
  uid: IdMapping;
  gid: IdMapping;
}

/*
 * Id-mapped mounts for a pod with its own user namespace: files keep the ownership the container
 * should see without anything being chowned. None is ever a copy in the host's mount table of
 * what it maps (a copy there would pin what lies below the source for as long as the container
 * lives, and unmounting its submounts by path could be turned against another mount):
 * - bind mounts are id-mapped by the OCI runtime in the container's mount namespace (uidMappings
 *   and gidMappings on the spec's mount, runc 1.2+);
 * - an overlay (the root filesystem, an image volume) is built over id-mapped layers by
 *   `helpers/mount-api.c idmapped-overlays` in a mount namespace of its own, so the host's table
 *   gets the overlay alone.
 */

/**
 * Checks up front that every source can be id-mapped, as the runtime will map it, so that a
 * filesystem that cannot be (procfs, an overlay, an old kernel) is refused by CreateContainer
 * naming it: each is id-mapped as a detached copy, which is dropped unattached.
 */
export async function checkIdmappable(usernsPath: string, sources: readonly string[]): Promise<void> {
  if (sources.length === 0) return;
  await runNativeHelper('mount-api', ['can-idmap', usernsPath, ...new Set(sources)], "id-mapped mounts for the pod's user namespace");
}

/** The spec's bind mounts, id-mapped by the runtime with the pod's mappings (recursively: submounts too); `skip` stays as it is. */
export function withIdMappings(mounts: readonly Mount[], mappings: PodIdMappings, skip: (source: string) => boolean): Mount[] {
  return mounts.map((m) =>
    m.type !== 'bind' || m.source === undefined || skip(m.source)
      ? m
      : { ...m, options: [...(m.options ?? []), 'ridmap'], uidMappings: [{ ...mappings.uid }], gidMappings: [{ ...mappings.gid }] },
  );
}

/** The sources of the bind mounts among `mounts` but those `skip` names. */
export function bindSourcesOf(mounts: readonly Mount[], skip: (source: string) => boolean): string[] {
  return mounts.flatMap((m) => (m.type === 'bind' && m.source !== undefined && !skip(m.source) ? [m.source] : []));
}

/**
 * Mounts `overlays`, each over id-mapped copies of its layers (`layers` lists every layer any of
 * them names), in one run of the helper: all or nothing.
 */
export async function mountIdmappedOverlays(usernsPath: string, layers: readonly string[], overlays: readonly OverlayMount[]): Promise<void> {
  const distinct = [...new Set(layers)];
  const specs = overlays.flatMap((o) => {
    const { flags, data } = mountFlagsAndData(o.options);
    return [o.target, String(flags), data];
  });
  await runNativeHelper('mount-api', ['idmapped-overlays', usernsPath, String(distinct.length), ...distinct, ...specs], "overlays over id-mapped layers for the pod's user namespace");
}
