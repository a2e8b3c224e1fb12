import { constants, promises as fs } from 'node:fs';
import { delimiter, isAbsolute, join } from 'node:path';

/** A program on the host that a daemon runs. */
export interface HostTool {
  /** What the tool is called in messages: `zstd`, `nsenter`. */
  name: string;
  /** An absolute path, or a bare command name looked up on PATH (as spawn does). */
  path: string;
  /** The Debian package that ships it. */
  debianPackage: string;
}

export interface MissingHostTool {
  tool: HostTool;
  /** Why it is missing, naming where it was looked for and what to install. */
  message: string;
}

async function isExecutableFile(path: string): Promise<boolean> {
  try {
    if (!(await fs.stat(path)).isFile()) return false;
    await fs.access(path, constants.X_OK);
    return true;
  } catch {
    return false;
  }
}

/** Where `tool` resolves: its own path if absolute, else the first executable match on `searchPath`. */
export async function resolveHostTool(tool: HostTool, searchPath = process.env.PATH ?? ''): Promise<string | undefined> {
  if (isAbsolute(tool.path)) return (await isExecutableFile(tool.path)) ? tool.path : undefined;
  for (const dir of searchPath.split(delimiter)) {
    if (dir === '') continue;
    const candidate = join(dir, tool.path);
    if (await isExecutableFile(candidate)) return candidate;
  }
  return undefined;
}

/** The tools that cannot be run, each with a message naming it, where it was expected and its Debian package. */
export async function missingHostTools(tools: readonly HostTool[], searchPath = process.env.PATH ?? ''): Promise<MissingHostTool[]> {
  const missing: MissingHostTool[] = [];
  for (const tool of tools) {
    if ((await resolveHostTool(tool, searchPath)) !== undefined) continue;
    const where = isAbsolute(tool.path) ? `no executable file at ${tool.path}` : `no executable "${tool.path}" on PATH (${searchPath || 'empty'})`;
    missing.push({ tool, message: `${tool.name} is missing: ${where}; install the Debian package ${tool.debianPackage}` });
  }
  return missing;
}

export class MissingHostToolsError extends Error {
  constructor(readonly missing: readonly MissingHostTool[]) {
    super(missing.map((m) => m.message).join('\n'));
    this.name = 'MissingHostToolsError';
  }
}

/** Throws a MissingHostToolsError naming every tool of `tools` that cannot be run. */
export async function requireHostTools(tools: readonly HostTool[], searchPath = process.env.PATH ?? ''): Promise<void> {
  const missing = await missingHostTools(tools, searchPath);
  if (missing.length > 0) throw new MissingHostToolsError(missing);
}
