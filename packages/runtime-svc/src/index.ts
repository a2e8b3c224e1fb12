// runtime-svc runs as its own daemon (main.ts, exported as '@skiff/runtime-svc/main'); other packages
// talk to it over its CRI socket, never by importing it. This entry is what serving it takes.
export { openRuntime, packageVersion, type OpenRuntimeOptions } from './daemon/open-runtime.js';
export type { RuntimeContext, ImageReader } from './daemon/context.js';
export { runtimeService } from './server.js';
