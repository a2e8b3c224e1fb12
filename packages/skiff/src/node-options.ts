/** The node options each Skiff node process runs with: the CLI's here, each daemon's in services.ts. */

/**
 * By default V8 lets each semi-space of the young generation grow to 16 MiB and keeps the pages:
 * about 8 MiB of a daemon's RSS idle, 15 MiB in runtime-svc under load. What these daemons allocate
 * per call dies young (decoded messages, child-process output, stream chunks), so small semi-spaces
 * only cost more scavenges: with 1 MiB, stream exec latency and port-forward throughput did not move.
 * runtime-svc gets 2 MiB: the same RSS as with 1, half the scavenges while it answers large ListContainers.
 */
export const smallYoungGeneration = (semiSpaceMiB: 1 | 2): string => `--max-semi-space-size=${semiSpaceMiB}`;

/**
 * V8's lite mode: bytecode only, no JIT. An idle daemon is ~8 MiB RSS and ~4 MiB PSS smaller (no
 * compiled-code space, feedback allocated lazily), and its heap grows less under load. The price is
 * JavaScript that runs hot: a byte loop is ~35x slower (ws unmasking 64 MiB: 136 ms with the JIT,
 * 4.8 s without), image-svc's pulls took up to 1.6x as long and runtime-svc's calls 0.1-0.3 ms
 * longer. So only logs-svc gets it among the daemons (it keeps up with journald, 93-94% of the
 * floor against 98-99%). Lite mode implies --jitless, which leaves out WebAssembly:
 * these processes must not use it (Node's fetch does, through undici's llhttp). Saying so with
 * --no-expose-wasm spares a warning on every start.
 */
export const LITE = ['--lite-mode', '--no-expose-wasm'];

/**
 * Lets a daemon collect its garbage once when it goes quiet after a burst (collectGarbageWhenQuiet
 * in @skiff/common): V8 alone leaves what died in the burst, Buffers included, until the next
 * allocation pressure, which a quiet daemon never builds up.
 */
export const IDLE_COLLECTION = '--expose-gc';

/**
 * The `skiff` command's own node processes (status, down, reload, `skiff up --plan`, `--detach`):
 * nothing in them runs hot, so lite mode and a small young generation. `bin/skiff` and
 * `bin/skiff-supervisor` pass them (a unit test checks they match). The supervisor itself is no
 * node process: see bin/skiff-supervisor.
 */
export const CLI_NODE_OPTIONS: readonly string[] = [smallYoungGeneration(1), ...LITE];
