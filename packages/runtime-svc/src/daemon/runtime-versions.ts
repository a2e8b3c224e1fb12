import type { Logger, RuntimeHandlerKind } from '@skiff/common';
import { readRuntimeVersion, RUNC_FIXED_RELEASES, runcLacksEscapeFixes } from '../oci/runtime-version.js';
import type { RuntimeHandlers } from './runtime-handlers.js';

/** The runtime binary behind a handler and what it says of itself. */
export interface HandlerRuntimeVersion {
  /** "" for the default handler. */
  handler: string;
  kind: RuntimeHandlerKind;
  path: string;
  /** The program's own name (runc, crun, runsc) and version, when `--version` answered. */
  name?: string;
  version?: string;
  commit?: string;
  /** Why the version could not be read. */
  error?: string;
  /** A runc older than the first release of its line with every known container escape fixed. */
  outdated: boolean;
}

/** Asks every handler's runtime binary for its version, once per binary. */
export async function inspectRuntimeVersions(handlers: RuntimeHandlers): Promise<HandlerRuntimeVersion[]> {
  const byPath = new Map<string, ReturnType<typeof readRuntimeVersion>>();
  return Promise.all(
    handlers.all().map(async (h) => {
      const path = h.runc.binary;
      if (!byPath.has(path)) byPath.set(path, readRuntimeVersion(path));
      const read = await byPath.get(path)!;
      if ('error' in read) return { handler: h.name, kind: h.kind, path, error: read.error, outdated: false };
      return { handler: h.name, kind: h.kind, path, ...read, outdated: read.name === 'runc' && runcLacksEscapeFixes(read.version) };
    }),
  );
}

/** Says, at warning level and in full, which runtimes have known container escapes or could not tell their version. */
export function warnOfRuntimeVersions(versions: readonly HandlerRuntimeVersion[], log: Logger): void {
  for (const v of versions) {
    const handler = v.handler === '' ? 'the default handler' : `handler "${v.handler}"`;
    if (v.outdated) {
      log.warn(
        { handler: v.handler, path: v.path, version: v.version, fixedIn: RUNC_FIXED_RELEASES },
        `SECURITY: ${handler} runs runc ${v.version} (${v.path}), which has known container escapes fixed in runc ${RUNC_FIXED_RELEASES.join(' and ')} ` +
          '(CVE-2025-31133, CVE-2025-52565, CVE-2025-52881, CVE-2026-41579): a container can reach the host. ' +
          'Install a fixed runc (scripts/runc.sh builds one at /usr/local/sbin/runc) and point the configuration at it',
      );
    } else if (v.error !== undefined) {
      log.warn({ handler: v.handler, path: v.path, err: v.error }, `the version of ${handler}'s runtime could not be read`);
    }
  }
}

/**
 * Version's runtime_version: Skiff's own version, with the default runtime's as semver build
 * metadata ("0.1.0+runc.1.4.3"), so that `crictl version` and the node's status show which runc runs.
 */
export function criRuntimeVersion(skiffVersion: string, versions: readonly HandlerRuntimeVersion[]): string {
  const runtime = versions.find((v) => v.handler === '');
  if (runtime?.name === undefined || runtime.version === undefined) return skiffVersion;
  const metadata = `${runtime.name}.${runtime.version}`.replace(/[^0-9A-Za-z.-]/g, '-');
  return `${skiffVersion}+${metadata}`;
}
