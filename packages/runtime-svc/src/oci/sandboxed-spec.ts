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
 *
 * runsc joins no host namespace for a container in its sandbox: a PID namespace path is only a
 * name, which runsc takes for the sandbox's own namespace when it reads `/proc/<sandbox pid>/ns/pid`
 * and for a new one otherwise. So the pod's (the pinned file) is left out: a container that names
 * no PID namespace runs in the sandbox's, as runsc would make it.
 */
export function adaptSpecToSandbox(spec: Spec, readonlyRootfs: boolean): Spec {
  const namespaces = spec.linux?.namespaces ?? [];
  const hostUts = !namespaces.some((ns) => ns.type === 'uts');
  return {
    ...spec,
    ...(hostUts && !spec.hostname ? { hostname: hostname() } : {}),
    ...(spec.root ? { root: { ...spec.root, readonly: readonlyRootfs } } : {}),
    linux: { ...spec.linux, namespaces: namespaces.filter((ns) => !(ns.type === 'pid' && ns.path !== undefined)) },
    mounts: (spec.mounts ?? []).filter((m) => !(m.destination === '/sys/fs/cgroup' && m.type === 'cgroup')),
  };
}
