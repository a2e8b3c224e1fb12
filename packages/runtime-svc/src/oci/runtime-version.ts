import { errorMessage, runCommand } from '@skiff/common';

/** What an OCI runtime says of itself on its first lines of `--version` ("runc version 1.4.3", "commit: ..."). */
export interface RuntimeVersion {
  /** The program's name as it prints it: runc, crun, runsc. */
  name: string;
  version: string;
  commit?: string;
}

/**
 * The first runc release of each maintained line with every known container escape fixed: the
 * mount races of CVE-2025-31133, CVE-2025-52565 and CVE-2025-52881 (1.2.8, 1.3.3) and the image
 * `/dev` symlink of CVE-2026-41579 (1.3.6, 1.4.3). Lines after the last one listed came later and
 * carry the fixes; 1.2 and earlier lines have no release with all of them. scripts/runc.sh holds
 * the same list.
 */
export const RUNC_FIXED_RELEASES = ['1.3.6', '1.4.3'] as const;

export function parseRuntimeVersion(output: string): RuntimeVersion | undefined {
  const lines = output.split('\n').map((l) => l.trim());
  const first = /^(\S+) version (\S+)/.exec(lines[0] ?? '');
  if (!first) return undefined;
  const commit = lines.find((l) => l.startsWith('commit: '))?.slice('commit: '.length);
  return { name: first[1]!, version: first[2]!, ...(commit ? { commit } : {}) };
}

/** The numeric release of a version ("1.1.5+ds1" → [1, 1, 5], "1.6.0-rc.1" → [1, 6, 0]); undefined when it has none. */
function release(version: string): [number, number, number] | undefined {
  const m = /^v?(\d+)\.(\d+)\.(\d+)/.exec(version);
  return m ? [Number(m[1]), Number(m[2]), Number(m[3])] : undefined;
}

/** Whether a runc of `version` lacks a fix of RUNC_FIXED_RELEASES (an unreadable version counts as lacking them). */
export function runcLacksEscapeFixes(version: string): boolean {
  const v = release(version);
  if (!v) return true;
  const fixes = RUNC_FIXED_RELEASES.map((r) => release(r)!);
  const sameLine = fixes.find(([major, minor]) => major === v[0] && minor === v[1]);
  if (sameLine) return v[2] < sameLine[2];
  const newest = fixes[fixes.length - 1]!;
  return v[0] < newest[0] || (v[0] === newest[0] && v[1] < newest[1]);
}

/** Runs `<binary> --version`; answers what it says, or why it could not be read. */
export async function readRuntimeVersion(binary: string): Promise<RuntimeVersion | { error: string }> {
  try {
    const result = await runCommand(binary, ['--version'], { timeoutMs: 10_000 });
    const parsed = result.code === 0 ? parseRuntimeVersion(result.stdout) : undefined;
    if (parsed) return parsed;
    return { error: `${binary} --version answered ${result.code === 0 ? 'no version line' : `exit ${result.code ?? result.signal}`}: ${(result.stdout + result.stderr).trim().slice(0, 200)}` };
  } catch (err) {
    return { error: `${binary} --version: ${errorMessage(err)}` };
  }
}
