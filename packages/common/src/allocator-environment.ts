/**
 * What `skiff up` and the systemd units put in a daemon's environment to choose its allocator
 * (jemalloc preloaded, glibc's tunables). They are for the daemon alone: runc, conmon (one per
 * container, for the container's life), journald and the helpers a daemon starts inherit its
 * environment, and each would otherwise load jemalloc and its background thread too.
 */
export const ALLOCATOR_VARIABLES = ['LD_PRELOAD', 'MALLOC_CONF', 'MALLOC_MMAP_THRESHOLD_'] as const;

/** Takes them out of this process's environment (the allocator is loaded already), before anything is spawned. */
export function keepAllocatorToThisProcess(env: NodeJS.ProcessEnv = process.env): void {
  for (const name of ALLOCATOR_VARIABLES) delete env[name];
}
