import { promises as fs } from 'node:fs';
import { join } from 'node:path';
import { status } from '@grpc/grpc-js';
import { StatusError } from '@skiff/common';
import type { cri } from '@skiff/proto';
import type { ImageReader } from '../daemon/context.js';
import type { BindMountInput } from '../oci/spec-builder.js';
import { mountReadonlyOverlay } from './mounts.js';

/** A CRI mount of an image's filesystem (KEP-4639): `mounts[index]` of the container config. */
export interface ImageVolume {
  index: number;
  containerPath: string;
  ref: string;
  /** Relative, without '..'; '' for the whole image. */
  subPath: string;
}

/** The image volumes among a container's CRI mounts, their sub-paths checked. */
export function imageVolumesOf(mounts: readonly cri.Mount__Output[]): ImageVolume[] {
  const volumes: ImageVolume[] = [];
  for (const [index, m] of mounts.entries()) {
    if (!m.image?.image) continue;
    const subPath = m.image_sub_path.replace(/^\/+|\/+$/g, '');
    if (subPath.split('/').some((part) => part === '..')) {
      throw new StatusError(status.INVALID_ARGUMENT, `mount ${m.container_path}: image_sub_path "${m.image_sub_path}" leaves the image`);
    }
    volumes.push({ index, containerPath: m.container_path, ref: m.image.image, subPath });
  }
  return volumes;
}

/** Where a container's image volumes are among its CRI mounts (as recorded, so already checked). */
export function imageVolumeIndexes(mounts: readonly cri.Mount__Output[]): number[] {
  return mounts.flatMap((m, index) => (m.image?.image ? [index] : []));
}

/** The lease that keeps an image volume's layers for the container: one per volume. */
export function imageVolumeLeaseHolder(containerId: string, index: number): string {
  return `${containerId}.image-volume-${index}`;
}

/** The container a lease holder belongs to (a container id, or one of its image volumes). */
export function leaseOwner(holder: string): string {
  return holder.split('.')[0]!;
}

/**
 * Each sub-path component must be a directory of the image, not a link: a link could lead the
 * bind anywhere on the host.
 */
async function checkSubPath(root: string, volume: ImageVolume): Promise<string> {
  let at = root;
  for (const part of volume.subPath.split('/').filter(Boolean)) {
    at = join(at, part);
    const st = await fs.lstat(at).catch(() => undefined);
    if (!st) throw new StatusError(status.INVALID_ARGUMENT, `mount ${volume.containerPath}: image_sub_path "${volume.subPath}" does not exist in image ${volume.ref}`);
    if (st.isSymbolicLink()) throw new StatusError(status.INVALID_ARGUMENT, `mount ${volume.containerPath}: image_sub_path "${volume.subPath}" passes through a symbolic link in image ${volume.ref}`);
    if (!st.isDirectory()) throw new StatusError(status.INVALID_ARGUMENT, `mount ${volume.containerPath}: image_sub_path "${volume.subPath}" is not a directory in image ${volume.ref}`);
  }
  return at;
}

/**
 * Mounts each image volume's layers read-only at `<container dir>/image-volumes/<index>`, leased
 * for the container like its root filesystem, and answers the binds runc makes of them:
 * read-only, noexec, nosuid and nodev, as Kubernetes documents image volumes. The mounts live
 * under the container's directory and the leases are named after the container, so removal,
 * a failed create and recovery take both away.
 */
export async function mountImageVolumes(
  images: ImageReader,
  containerId: string,
  containerDir: string,
  volumes: readonly ImageVolume[],
  /** In a pod with its own user namespace: id-mapped copies of the layers (an overlay cannot be id-mapped itself). */
  mapLayers?: (lowerDirs: string[]) => Promise<string[]>,
): Promise<BindMountInput[]> {
  const binds: BindMountInput[] = [];
  for (const volume of volumes) {
    // An image that is not there is NotFound naming it (the kubelet pulls image volumes first).
    const resolved = await images.resolveRootfs(volume.ref);
    const lowerDirs = await images.acquireLease(imageVolumeLeaseHolder(containerId, volume.index), resolved.image);
    const target = join(containerDir, 'image-volumes', String(volume.index));
    await fs.mkdir(target, { recursive: true, mode: 0o755 });
    await mountReadonlyOverlay(target, mapLayers ? await mapLayers(lowerDirs) : lowerDirs, join(containerDir, 'empty'));
    binds.push({ containerPath: volume.containerPath, hostPath: await checkSubPath(target, volume), readonly: true, options: ['noexec', 'nosuid', 'nodev'] });
  }
  return binds;
}


