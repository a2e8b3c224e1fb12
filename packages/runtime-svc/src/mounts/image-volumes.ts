import { promises as fs } from 'node:fs';
import { join } from 'node:path';
import { status } from '@grpc/grpc-js';
import { StatusError } from '@skiff/common';
import type { cri } from '@skiff/proto';
import type { ImageReader } from '../daemon/context.js';
import type { BindMountInput } from '../oci/spec-builder.js';
import { readonlyOverlay, type OverlayMount } from './mounts.js';

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
async function checkSubPath(root: string, volume: ImageVolume): Promise<void> {
  let at = root;
  for (const part of volume.subPath.split('/').filter(Boolean)) {
    at = join(at, part);
    const st = await fs.lstat(at).catch(() => undefined);
    if (!st) throw new StatusError(status.INVALID_ARGUMENT, `mount ${volume.containerPath}: image_sub_path "${volume.subPath}" does not exist in image ${volume.ref}`);
    if (st.isSymbolicLink()) throw new StatusError(status.INVALID_ARGUMENT, `mount ${volume.containerPath}: image_sub_path "${volume.subPath}" passes through a symbolic link in image ${volume.ref}`);
    if (!st.isDirectory()) throw new StatusError(status.INVALID_ARGUMENT, `mount ${volume.containerPath}: image_sub_path "${volume.subPath}" is not a directory in image ${volume.ref}`);
  }
}

/** An image volume whose layers are leased for the container, not mounted yet. */
export interface LeasedImageVolume {
  volume: ImageVolume;
  /** The image's layers, top first. */
  lowerDirs: string[];
  /** Where its overlay goes: `<container dir>/image-volumes/<index>`. */
  target: string;
  /**
   * The bind runc makes of it: read-only, nosuid and nodev. Not noexec: Kubernetes documents image
   * volumes as read-only only (the ImageVolume design dropped noexec), and their programs are run.
   */
  bind: BindMountInput;
}

/**
 * Resolves each image volume's image and leases its layers for the container (the leases are
 * named after the container, so removal, a failed create and recovery release them).
 */
export async function leaseImageVolumes(images: ImageReader, containerId: string, containerDir: string, volumes: readonly ImageVolume[]): Promise<LeasedImageVolume[]> {
  const leased: LeasedImageVolume[] = [];
  for (const volume of volumes) {
    // An image that is not there is NotFound naming it (the kubelet pulls image volumes first).
    const resolved = await images.resolveRootfs(volume.ref);
    const lowerDirs = await images.acquireLease(imageVolumeLeaseHolder(containerId, volume.index), resolved.image);
    const target = join(containerDir, 'image-volumes', String(volume.index));
    const bind: BindMountInput = { containerPath: volume.containerPath, hostPath: join(target, volume.subPath), readonly: true, options: ['nosuid', 'nodev'] };
    leased.push({ volume, lowerDirs, target, bind });
  }
  return leased;
}

/**
 * The read-only overlay of each leased image volume's layers, at its target under the container's
 * directory (so everything that unmounts it takes them away too); the targets are made here.
 */
export async function imageVolumeOverlays(containerDir: string, leased: readonly LeasedImageVolume[]): Promise<OverlayMount[]> {
  const overlays: OverlayMount[] = [];
  for (const { lowerDirs, target } of leased) {
    await fs.mkdir(target, { recursive: true, mode: 0o755 });
    overlays.push(await readonlyOverlay(target, lowerDirs, join(containerDir, 'empty')));
  }
  return overlays;
}

/** Checks each mounted image volume's sub-path. */
export async function checkImageVolumeSubPaths(leased: readonly LeasedImageVolume[]): Promise<void> {
  for (const { volume, target } of leased) await checkSubPath(target, volume);
}
