import { hostname } from 'node:os';
import { posix } from 'node:path';
import { status } from '@grpc/grpc-js';
import { StatusError } from '@skiff/common';
import type { cri } from '@skiff/proto';
import { featuresOf, type HandlerFeatures, type RuntimeHandler } from '../daemon/runtime-handlers.js';
import type { Spec } from './runtime-spec.js';
import { isNetworkSysctl } from '../sandbox/pod-sysctls.js';
import type { SeccompInput } from './spec-builder.js';

/** Why a handler cannot honour a pod feature, or undefined when it can. */
function missingFeature(handler: RuntimeHandler, feature: keyof HandlerFeatures, what: string): StatusError | undefined {
  if (featuresOf(handler.kind)[feature]) return undefined;
  const name = handler.name || 'runc';
  return new StatusError(status.INVALID_ARGUMENT, `runtime handler "${name}" does not support ${what}; run the pod with a handler that does (see Status runtime_handlers)`);
}

/** RunPodSandbox's checks of what a handler can do for the pod. */
export function checkSandboxFeatures(handler: RuntimeHandler, userNamespace: boolean, sysctls: Readonly<Record<string, string>>): void {
  const error = userNamespace ? missingFeature(handler, 'userNamespaces', 'user namespaces (hostUsers: false)') : undefined;
  if (error) throw error;
  const unset = Object.keys(sysctls).filter((name) => !isNetworkSysctl(name));
  if (handler.kind === 'sandbox' && unset.length > 0) {
    throw new StatusError(status.INVALID_ARGUMENT, `runtime handler "${handler.name}" runs the pod under gVisor's own kernel, which sets no sysctl: ${unset.join(', ')} cannot be applied (net.* sysctls can, in the pod's network namespace)`);
  }
}

/** A path in the kernel's own filesystems, /proc and /sys: under runsc, gVisor's kernel's. */
function isKernelPath(path: string): boolean {
  const normal = posix.normalize(path);
  return normal === '/proc' || normal === '/sys' || normal.startsWith('/proc/') || normal.startsWith('/sys/');
}

/** runsc applies a spec's seccomp filter inside the sandbox only with this flag; without it, it ignores the filter. */
export const RUNSC_OCI_SECCOMP_FLAG = '--oci-seccomp';

function appliesOciSeccomp(handler: RuntimeHandler): boolean {
  return handler.runc.extraArgs.some((arg) => arg === RUNSC_OCI_SECCOMP_FLAG || arg === `${RUNSC_OCI_SECCOMP_FLAG}=true`);
}

/** CreateContainer's checks of what a handler can do for the container. */
export function checkContainerFeatures(handler: RuntimeHandler, config: cri.ContainerConfig__Output, seccomp: SeccompInput): void {
  if (config.mounts.some((m) => m.recursive_read_only)) {
    const error = missingFeature(handler, 'recursiveReadOnlyMounts', 'recursive read-only mounts');
    if (error) throw error;
  }
  if (handler.kind !== 'sandbox') return;
  const shared = config.mounts.find((m) => m.propagation === 'PROPAGATION_BIDIRECTIONAL');
  if (shared) {
    throw new StatusError(status.INVALID_ARGUMENT, `runtime handler "${handler.name}" runs the pod under gVisor's own kernel, whose mounts never reach the host: mount ${shared.container_path} cannot have bidirectional (rshared) propagation; use HostToContainer or none`);
  }
  checkSandboxedSecurity(handler, config.linux?.security_context ?? null, seccomp);
}

/**
 * What a security context asks of a container in a runsc sandbox that gVisor would silently not
 * do: refused, so that the container never runs weaker than asked.
 */
function checkSandboxedSecurity(handler: RuntimeHandler, security: cri.LinuxContainerSecurityContext__Output | null, seccomp: SeccompInput): void {
  const refuse = (why: string): never => {
    throw new StatusError(status.INVALID_ARGUMENT, `runtime handler "${handler.name}" runs the pod under gVisor's own kernel: ${why}`);
  };
  if (security?.namespace_options?.pid === 'TARGET') refuse("a container cannot join another container's PID namespace (TARGET)");
  if (security?.privileged) return;
  if (seccomp.kind !== 'unconfined' && !appliesOciSeccomp(handler)) {
    refuse(`it applies no seccomp profile without runsc's ${RUNSC_OCI_SECCOMP_FLAG} flag, and the container asks for one (seccomp ${seccomp.kind}); add the flag to the handler's runtime_args or run the container Unconfined`);
  }
  // gVisor ignores an OCI spec's maskedPaths and readonlyPaths. They exist to hide the host
  // kernel's files under /proc and /sys and keep its settings unwritten (kubelets, runtimes and
  // their versions name different lists); under gVisor those files are its own kernel's, absent,
  // empty or read-only. A path anywhere else would stay readable and writable.
  const unmasked = (security?.masked_paths ?? []).filter((p) => !isKernelPath(p));
  if (unmasked.length > 0) refuse(`gVisor cannot mask paths (masked_paths ${unmasked.join(', ')}); only paths under /proc and /sys, which are gVisor's own, are accepted`);
  const writable = (security?.readonly_paths ?? []).filter((p) => !isKernelPath(p));
  if (writable.length > 0) refuse(`gVisor cannot make paths read-only (readonly_paths ${writable.join(', ')}); only paths under /proc and /sys, which are gVisor's own, are accepted; mount a read-only volume instead`);
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
