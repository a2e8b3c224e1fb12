import { promises as fs } from 'node:fs';
import { posix } from 'node:path';
import { status } from '@grpc/grpc-js';
import { StatusError, errorMessage } from '@skiff/common';
import type { cri } from '@skiff/proto';
import type { SandboxPaths } from '../daemon/paths.js';
import type { Mount } from '../oci/runtime-spec.js';
import { BIND_MOUNT_OPTIONS, type BindMountInput, type MountPropagation } from '../oci/spec-builder.js';
import type { SandboxRecord } from '../state/records.js';
import { shmMount } from '../sandbox/sandbox-container.js';

const PROPAGATION: Record<string, MountPropagation> = {
  PROPAGATION_PRIVATE: 'private',
  PROPAGATION_HOST_TO_CONTAINER: 'rslave',
  PROPAGATION_BIDIRECTIONAL: 'rshared',
};

/**
 * The first of a mount's options that would undo a protection its own fields ask for, with that
 * field: `rw` makes a `readonly` or `recursive_read_only` mount writable again (runc applies the
 * options after the read-only flag), and an image volume is read-only by definition.
 */
export function optionUndoingRequest(m: Pick<cri.Mount__Output, 'readonly' | 'recursive_read_only' | 'mount_options' | 'image'>): { option: string; field: string } | undefined {
  const field = m.image?.image ? 'image (an image volume is read-only)' : m.recursive_read_only ? 'recursive_read_only: true' : m.readonly ? 'readonly: true' : undefined;
  if (field === undefined) return undefined;
  const option = m.mount_options.find((o) => o === 'rw');
  return option === undefined ? undefined : { option, field };
}

/** CRI host-path mounts as bind mounts; refuses what this runtime cannot do rather than doing it silently wrong. */
export function bindMountsOf(mounts: readonly cri.Mount__Output[]): BindMountInput[] {
  for (const m of mounts) {
    if (!m.container_path || !m.container_path.startsWith('/')) {
      throw new StatusError(status.INVALID_ARGUMENT, `mount container_path "${m.container_path}" must be an absolute path`);
    }
    const undoing = optionUndoingRequest(m);
    if (undoing) {
      throw new StatusError(status.INVALID_ARGUMENT, `mount ${m.container_path}: mount_options "${undoing.option}" contradicts ${undoing.field}: it would make the mount writable`);
    }
  }
  // Image volumes are mounted from the image store (mounts/image-volumes.ts).
  return mounts.filter((m) => !m.image?.image).map((m) => {
    if (!m.host_path || !m.host_path.startsWith('/')) {
      throw new StatusError(status.INVALID_ARGUMENT, `mount ${m.container_path}: host_path "${m.host_path}" must be an absolute path`);
    }
    if (m.recursive_read_only && (!m.readonly || m.propagation !== 'PROPAGATION_PRIVATE')) {
      throw new StatusError(status.INVALID_ARGUMENT, `mount ${m.container_path}: recursive_read_only needs readonly and private propagation`);
    }
    const unknown = m.mount_options.filter((o) => !BIND_MOUNT_OPTIONS.has(o));
    if (unknown.length > 0) {
      throw new StatusError(status.INVALID_ARGUMENT, `mount ${m.container_path}: mount_options ${unknown.join(', ')} are not supported (supported: ${[...BIND_MOUNT_OPTIONS].join(', ')})`);
    }
    if (m.uidMappings.length > 0 || m.gidMappings.length > 0) {
      throw new StatusError(status.INVALID_ARGUMENT, `mount ${m.container_path}: id-mapped mounts are not supported by this runtime`);
    }
    return {
      containerPath: m.container_path,
      hostPath: m.host_path,
      readonly: m.readonly,
      recursiveReadonly: m.recursive_read_only,
      options: [...m.mount_options],
      propagation: PROPAGATION[m.propagation] ?? 'private',
    };
  });
}

function unusableHostPath(m: BindMountInput, err: unknown): StatusError {
  return new StatusError(status.INVALID_ARGUMENT, `mount ${m.containerPath}: host_path ${m.hostPath} cannot be used: ${errorMessage(err)}`);
}

/**
 * A CRI mount's host path that does not exist is made a directory (0755, parents too), as
 * containerd, CRI-O and Docker do: a hostPath volume without a type promises no check, and the
 * kubelet leaves the path to the runtime (the node conformance suite's device plugin mounts
 * /var/run/cdi so). One that exists, or cannot be made, must be usable.
 */
export async function makeMissingHostPaths(mounts: readonly BindMountInput[]): Promise<void> {
  for (const m of mounts) {
    try {
      await fs.stat(m.hostPath);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw unusableHostPath(m, err);
      await fs.mkdir(m.hostPath, { recursive: true, mode: 0o755 }).catch((mkdirErr: unknown) => {
        throw unusableHostPath(m, mkdirErr);
      });
    }
  }
}

/** Every host path a CDI spec names must exist: a missing one is the spec's fault. */
export async function ensureHostPaths(mounts: readonly BindMountInput[]): Promise<void> {
  for (const m of mounts) {
    try {
      await fs.stat(m.hostPath);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') {
        throw new StatusError(status.INVALID_ARGUMENT, `mount ${m.containerPath}: host_path ${m.hostPath} does not exist`);
      }
      throw unusableHostPath(m, err);
    }
  }
}

/**
 * The pod's shared files the container gets unless it mounts something there itself: /etc/hosts,
 * /etc/hostname, /etc/resolv.conf and /dev/shm.
 */
export function podFileMounts(sandbox: SandboxRecord, paths: SandboxPaths, userMounts: readonly BindMountInput[], readonlyRootfs: boolean): Mount[] {
  const taken = new Set(userMounts.map((m) => posix.normalize(m.containerPath).replace(/\/+$/, '')));
  const mode = readonlyRootfs ? 'ro' : 'rw';
  const files: Mount[] = [
    { destination: '/etc/hosts', type: 'bind', source: paths.hosts, options: ['rbind', 'rprivate', mode] },
    { destination: '/etc/hostname', type: 'bind', source: paths.hostname, options: ['rbind', 'rprivate', mode] },
    { destination: '/etc/resolv.conf', type: 'bind', source: paths.resolvConf, options: ['rbind', 'rprivate', mode] },
    shmMount(sandbox, paths),
  ];
  return files.filter((m) => !taken.has(m.destination));
}
