import { hostname } from 'node:os';
import { status } from '@grpc/grpc-js';
import { StatusError } from '@skiff/common';
import type { cri } from '@skiff/proto';
import { featuresOf, type HandlerFeatures, type RuntimeHandler } from '../daemon/runtime-handlers.js';
import type { Spec } from './runtime-spec.js';

/** Why a handler cannot honour a pod feature, or undefined when it can. */
function missingFeature(handler: RuntimeHandler, feature: keyof HandlerFeatures, what: string): StatusError | undefined {
  if (featuresOf(handler.kind)[feature]) return undefined;
  const name = handler.name || 'runc';
  return new StatusError(status.INVALID_ARGUMENT, `runtime handler "${name}" does not support ${what}; run the pod with a handler that does (see Status runtime_handlers)`);
}

/** RunPodSandbox's checks of what a handler can do for the pod. */
export function checkSandboxFeatures(handler: RuntimeHandler, userNamespace: boolean): void {
  const error = userNamespace ? missingFeature(handler, 'userNamespaces', 'user namespaces (hostUsers: false)') : undefined;
  if (error) throw error;
}

/** CreateContainer's checks of what a handler can do for the container. */
export function checkContainerFeatures(handler: RuntimeHandler, config: cri.ContainerConfig__Output): void {
  if (config.mounts.some((m) => m.recursive_read_only)) {
    const error = missingFeature(handler, 'recursiveReadOnlyMounts', 'recursive read-only mounts');
    if (error) throw error;
  }
  if (handler.kind === 'sandbox' && config.linux?.security_context?.namespace_options?.pid === 'TARGET') {
    throw new StatusError(status.INVALID_ARGUMENT, `runtime handler "${handler.name}" runs the pod under its own kernel: a container cannot join another container's PID namespace (TARGET)`);
  }
}

/**
 * A container joining a runsc sandbox. The sandbox's kernel provides its own cgroup filesystem and
 * refuses a second one at /sys/fs/cgroup ("file exists"). A read-only root is the sandbox's to
 * enforce: its gofer makes the mount points at start, so the host overlay cannot be read-only
 * then, as it is for runc (see rootfs-protection.ts). In the host's UTS namespace the container
 * sees the sandbox kernel's name, which is set to the host's.
 */
export function adaptSpecToSandbox(spec: Spec, readonlyRootfs: boolean): Spec {
  const hostUts = !(spec.linux?.namespaces ?? []).some((ns) => ns.type === 'uts');
  return {
    ...spec,
    ...(hostUts && !spec.hostname ? { hostname: hostname() } : {}),
    ...(spec.root ? { root: { ...spec.root, readonly: readonlyRootfs } } : {}),
    mounts: (spec.mounts ?? []).filter((m) => !(m.destination === '/sys/fs/cgroup' && m.type === 'cgroup')),
  };
}
