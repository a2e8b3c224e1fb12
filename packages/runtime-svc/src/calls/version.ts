// CRI RuntimeService.Version
import type { cri } from '@skiff/proto';
import type { RuntimeContext } from '../daemon/context.js';
import { criRuntimeVersion } from '../daemon/runtime-versions.js';

export const RUNTIME_NAME = 'skiff';
export const RUNTIME_API_VERSION = 'v1';
/** The CRI version runtime.v1 runtimes report. */
export const CRI_VERSION = '0.1.0';

export function versionCall(ctx: RuntimeContext): cri.VersionResponse {
  return { version: CRI_VERSION, runtime_name: RUNTIME_NAME, runtime_version: criRuntimeVersion(ctx.runtimeVersion, ctx.runtimeVersions), runtime_api_version: RUNTIME_API_VERSION };
}
