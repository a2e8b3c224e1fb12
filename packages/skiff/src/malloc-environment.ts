import { existsSync } from 'node:fs';

/**
 * The allocator settings each daemon gets in its environment (`skiff up` and the systemd unit).
 * Node never calls malloc_trim: with glibc's allocator, what a burst churned through stays in RSS.
 * Figures: bench/README.md, "Memory after a burst".
 */

/**
 * image-svc: glibc with a fixed mmap threshold. glibc carves blocks under its mmap threshold
 * (128 KiB at first) from the heap, and raises the threshold to the size of any mmap()ed block
 * freed (up to 32 MiB). A pull churns through blocks of 64 KiB to a few MiB (socket reads, zlib's
 * windows, decompressed chunks); carved from the heap and freed between longer-lived small blocks,
 * they leave holes only the heap's top could give back: after 50 pulls image-svc kept ~20 MiB. A
 * threshold of 64 KiB mmap()s those blocks, unmaps them on free, and turns the raising off.
 */
export const MALLOC_ENVIRONMENT: Readonly<Record<string, string>> = {
  MALLOC_MMAP_THRESHOLD_: String(64 * 1024),
};

const MULTIARCH: Readonly<Partial<Record<NodeJS.Architecture, string>>> = { x64: 'x86_64-linux-gnu', arm64: 'aarch64-linux-gnu' };

/** Debian's libjemalloc2 for this machine's architecture. */
export const JEMALLOC_PATH = `/usr/lib/${MULTIARCH[process.arch] ?? `${process.arch}-linux-gnu`}/libjemalloc.so.2`;

/**
 * stream-svc, runtime-svc and logs-svc: jemalloc, preloaded. The fixed mmap threshold would cost
 * each socket read an mmap and a munmap, which stream-svc's port-forwarding cannot pay; with
 * glibc's defaults stream-svc kept +16 MiB a minute after 200 exec sessions. jemalloc gives free
 * pages back wherever they are in its arenas, after `dirty_decay_ms`, from a background thread (a
 * quiet daemon makes no allocator calls that would do it); `muzzy_decay_ms:0` returns them with
 * MADV_DONTNEED rather than MADV_FREE, whose pages count in RSS until the kernel wants them.
 * Without Debian's libjemalloc2 (scripts/setup.sh installs it) the daemons run on glibc's allocator.
 */
export function jemallocEnvironment(path: string = JEMALLOC_PATH): Readonly<Record<string, string>> {
  if (!existsSync(path)) return {};
  return { LD_PRELOAD: path, MALLOC_CONF: 'background_thread:true,dirty_decay_ms:5000,muzzy_decay_ms:0' };
}
