import { fileURLToPath } from 'node:url';

/** This package's built entry point, which TestDaemon runs as a process of its own. */
export const RUNTIME_MAIN = fileURLToPath(new URL('../main.js', import.meta.url));
