import { fileURLToPath } from 'node:url';

/**
 * What conmon runs in place of a sandbox-kind runtime (runsc), with the runtime's path as its
 * first argument: see helpers/sandbox-runtime.sh.
 */
export const SANDBOX_RUNTIME_LAUNCHER = fileURLToPath(new URL('../helpers/sandbox-runtime.sh', import.meta.url));
