/**
 * glibc's allocator settings for image-svc, given in its environment (`skiff up` and the systemd
 * unit). Node never calls malloc_trim: what glibc keeps after a burst stays in RSS.
 *
 * glibc carves blocks under its mmap threshold (128 KiB at first) from the heap, and raises the
 * threshold to the size of any mmap()ed block freed (up to 32 MiB). What a burst churns through is
 * mostly blocks of 64 KiB to a few MiB: socket reads (64 KiB each), zlib's windows and buffers
 * of gzip layers, decompressed chunks. Carved from the heap and freed between longer-lived small
 * blocks, they leave holes that only the heap's top could give back: after 50 pulls image-svc kept
 * ~20 MiB of it. A fixed threshold of 64 KiB mmap()s those blocks and unmaps them on free, and
 * turns the raising off. It has a price: each socket read maps and unmaps its 64 KiB (a loopback
 * TCP copy in one node process ran at about half the speed), so the other daemons, stream-svc's
 * port-forwarding above all, keep glibc's defaults. Figures: bench/README.md, "Memory after a burst".
 */
export const MALLOC_ENVIRONMENT: Readonly<Record<string, string>> = {
  MALLOC_MMAP_THRESHOLD_: String(64 * 1024),
};
