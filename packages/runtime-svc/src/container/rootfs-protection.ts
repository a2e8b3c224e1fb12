/**
 * How a container's root filesystem is protected. An image may carry device nodes (images
 * legitimately do), but an unprivileged container must not use one it brought itself, so its
 * overlay is mounted `nodev`. runc would lose that flag making a read-only root: it remounts
 * the root with MS_RDONLY alone, which resets the mount's other flags (1.1.5 and 1.4.3 alike;
 * only in a user namespace, where the kernel refuses to clear locked flags, does it keep them). So an unprivileged
 * read-only root is instead made read-only by remounting the overlay itself once runc has
 * created the container (nothing of the container has run yet), keeping `nodev`.
 */
export interface RootfsProtection {
  /** Mount the overlay with nodev. */
  nodev: boolean;
  /** The OCI spec's root.readonly: runc makes the root read-only. */
  runcReadonly: boolean;
  /** Remount the overlay read-only after runc create. */
  remountReadonlyAfterCreate: boolean;
}

export function rootfsProtection(privileged: boolean, readonlyRootfs: boolean): RootfsProtection {
  if (privileged) return { nodev: false, runcReadonly: readonlyRootfs, remountReadonlyAfterCreate: false };
  return { nodev: true, runcReadonly: false, remountReadonlyAfterCreate: readonlyRootfs };
}
